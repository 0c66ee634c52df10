package io.moe4j.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes a safetensors file: header padded with spaces to a multiple of 8 bytes (so the data that follows is
 * aligned), tensors laid out in the order they were added. Data may come from heap arrays or off-heap segments.
 */
public final class SafetensorsWriter {
    private record Entry(String name, DType dtype, long[] shape, MemorySegment data) {
    }

    private final List<Entry> entries = new ArrayList<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    public SafetensorsWriter metadata(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    public SafetensorsWriter add(String name, DType dtype, long[] shape, MemorySegment data) {
        long elements = 1;
        for (long d : shape) {
            elements = Math.multiplyExact(elements, d);
        }
        long bytes = Math.multiplyExact(elements, (long) dtype.bits()) / 8;
        if (bytes != data.byteSize()) {
            throw new IllegalArgumentException(name + ": " + dtype + " " + java.util.Arrays.toString(shape) + " needs "
                    + bytes + " bytes, got " + data.byteSize());
        }
        if (entries.stream().anyMatch(e -> e.name.equals(name))) {
            throw new IllegalArgumentException("duplicate tensor " + name);
        }
        entries.add(new Entry(name, dtype, shape.clone(), data));
        return this;
    }

    public SafetensorsWriter add(String name, DType dtype, long[] shape, byte[] data) {
        return add(name, dtype, shape, MemorySegment.ofArray(data));
    }

    public SafetensorsWriter addF32(String name, long[] shape, float[] data) {
        ByteBuffer b = ByteBuffer.allocate(data.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(data);
        return add(name, DType.F32, shape, b.array());
    }

    public SafetensorsWriter addI32(String name, long[] shape, int[] data) {
        ByteBuffer b = ByteBuffer.allocate(data.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asIntBuffer().put(data);
        return add(name, DType.I32, shape, b.array());
    }

    public SafetensorsWriter addI64(String name, long[] shape, long[] data) {
        ByteBuffer b = ByteBuffer.allocate(data.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        b.asLongBuffer().put(data);
        return add(name, DType.I64, shape, b.array());
    }

    /** BF16 by round-to-nearest-even of each float. */
    public SafetensorsWriter addBf16(String name, long[] shape, float[] data) {
        ByteBuffer b = ByteBuffer.allocate(data.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : data) {
            b.putShort(bf16(f));
        }
        return add(name, DType.BF16, shape, b.array());
    }

    private static short bf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    public byte[] headerBytes() {
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = json.createObjectNode();
        if (!metadata.isEmpty()) {
            ObjectNode meta = root.putObject("__metadata__");
            metadata.forEach(meta::put);
        }
        long offset = 0;
        for (Entry e : entries) {
            ObjectNode t = root.putObject(e.name);
            t.put("dtype", e.dtype.name());
            ArrayNode shape = t.putArray("shape");
            for (long d : e.shape) {
                shape.add(d);
            }
            ArrayNode offsets = t.putArray("data_offsets");
            offsets.add(offset);
            offset += e.data.byteSize();
            offsets.add(offset);
        }
        byte[] text = root.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (text.length + 7) / 8 * 8;
        byte[] out = new byte[padded];
        java.util.Arrays.fill(out, (byte) ' ');
        System.arraycopy(text, 0, out, 0, text.length);
        return out;
    }

    public void write(Path path) {
        byte[] header = headerBytes();
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer len = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).flip();
            writeFully(ch, len);
            writeFully(ch, ByteBuffer.wrap(header));
            for (Entry e : entries) {
                long pos = 0;
                long size = e.data.byteSize();
                while (pos < size) {
                    long n = Math.min(size - pos, 1 << 24);
                    writeFully(ch, e.data.asSlice(pos, n).asByteBuffer());
                    pos += n;
                }
            }
        } catch (IOException ex) {
            throw new io.moe4j.MoeException(path + ": cannot write: " + ex.getMessage());
        }
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }
}

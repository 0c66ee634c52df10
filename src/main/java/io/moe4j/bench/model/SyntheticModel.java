package io.moe4j.bench.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.safetensors.Checkpoint;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

/**
 * Writes a model directory of a {@link ModelShape} with random weights in its family's hub layout and scheme:
 * config.json, one safetensors shard for the embedding, each layer, and the head, and
 * {@code model.safetensors.index.json}. Tensors are generated and written a chunk at a time, so a model of many
 * gigabytes needs a few megabytes of memory. A directory written before for the same config is reused: the config is
 * written last, into a directory renamed into place only when complete.
 */
public final class SyntheticModel {
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int CHUNK = 16 << 20;
    private static final String DONE = "moe4j-bench-complete";

    private SyntheticModel() {
    }

    /** Bytes of all tensor data the model holds (its size on disk, less the headers). */
    public static long checkpointBytes(ModelShape s) {
        return ModelTensors.shards(s).stream().flatMap(List::stream).mapToLong(TensorSpec::bytes).sum();
    }

    /** Whether {@code dir} holds a complete model of shape {@code s} written by {@link #write}. */
    public static boolean isWritten(Path dir, ModelShape s) {
        Path done = dir.resolve(DONE);
        try {
            return Files.isRegularFile(done) && Files.readString(done).equals(ConfigJson.of(s));
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Writes the model into {@code dir} unless it is there already.
     *
     * @param progress gets the bytes of tensor data as they are written (in total {@link #checkpointBytes})
     * @return whether it was written (false: reused)
     */
    public static boolean writeIfAbsent(Path dir, ModelShape s, long seed, LongConsumer progress) {
        if (isWritten(dir, s)) {
            return false;
        }
        Path tmp = dir.resolveSibling(dir.getFileName() + ".partial");
        try {
            deleteTree(tmp);
            deleteTree(dir);
            write(tmp, s, seed, progress);
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new MoeException(dir + ": cannot write the synthetic model: " + e.getMessage(), e);
        }
        return true;
    }

    /** Writes the model into the (new or empty) directory {@code dir}. */
    public static void write(Path dir, ModelShape s, long seed, LongConsumer progress) throws IOException {
        if (s.family() == ModelShape.Family.DEEPSEEK_V3 && s.experts() % 8 != 0) {
            throw new IllegalArgumentException("DeepSeek-V3's routing takes 8 expert groups: experts must be a multiple"
                    + " of 8, got " + s.experts());
        }
        Files.createDirectories(dir);
        List<List<TensorSpec>> shards = ModelTensors.shards(s);
        ObjectMapper json = new ObjectMapper();
        ObjectNode index = json.createObjectNode();
        index.putObject("metadata").put("total_size", checkpointBytes(s));
        ObjectNode map = index.putObject("weight_map");
        SplittableRandom rnd = new SplittableRandom(seed);
        ByteBuffer chunk = ByteBuffer.allocateDirect(CHUNK);
        MemorySegment seg = MemorySegment.ofBuffer(chunk);
        for (int i = 0; i < shards.size(); i++) {
            String file = String.format("model-%05d-of-%05d.safetensors", i + 1, shards.size());
            writeShard(dir.resolve(file), shards.get(i), rnd.split(), chunk, seg, progress);
            for (TensorSpec t : shards.get(i)) {
                map.put(t.name(), file);
            }
        }
        Files.writeString(dir.resolve(Checkpoint.INDEX_FILE), json.writerWithDefaultPrettyPrinter()
                .writeValueAsString(index));
        String config = ConfigJson.of(s);
        Files.writeString(dir.resolve("config.json"), config);
        Files.writeString(dir.resolve(DONE), config);
    }

    private static void writeShard(Path file, List<TensorSpec> tensors, SplittableRandom rnd, ByteBuffer chunk,
                                   MemorySegment seg, LongConsumer progress) throws IOException {
        byte[] header = header(tensors);
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            writeFully(ch, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(header.length).flip());
            writeFully(ch, ByteBuffer.wrap(header));
            for (TensorSpec t : tensors) {
                long left = t.bytes();
                while (left > 0) {
                    int n = (int) Math.min(left, CHUNK);
                    fill(seg, n, t.fill(), rnd);
                    chunk.clear().limit(n);
                    writeFully(ch, chunk);
                    left -= n;
                    progress.accept(n);
                }
            }
        }
    }

    /** The first n bytes of seg from the fill; chunks are whole longs but for a tensor's last one. */
    private static void fill(MemorySegment seg, int n, Fill fill, SplittableRandom rnd) {
        int longs = n / 8;
        for (int i = 0; i < longs; i++) {
            seg.setAtIndex(LONG, i, fill.next(rnd));
        }
        if (n % 8 != 0) {
            long last = fill.next(rnd);
            for (int b = longs * 8; b < n; b++, last >>>= 8) {
                seg.set(ValueLayout.JAVA_BYTE, b, (byte) last);
            }
        }
    }

    private static byte[] header(List<TensorSpec> tensors) {
        ObjectMapper json = new ObjectMapper();
        ObjectNode root = json.createObjectNode();
        root.putObject("__metadata__").put("format", "pt");
        long offset = 0;
        for (TensorSpec t : tensors) {
            ObjectNode n = root.putObject(t.name());
            n.put("dtype", t.dtype().name());
            var shape = n.putArray("shape");
            for (long d : t.shape()) {
                shape.add(d);
            }
            n.putArray("data_offsets").add(offset).add(offset + t.bytes());
            offset += t.bytes();
        }
        byte[] text = root.toString().getBytes(StandardCharsets.UTF_8);
        byte[] padded = new byte[(text.length + 7) / 8 * 8];
        java.util.Arrays.fill(padded, (byte) ' ');
        System.arraycopy(text, 0, padded, 0, text.length);
        return padded;
    }

    private static void writeFully(FileChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}

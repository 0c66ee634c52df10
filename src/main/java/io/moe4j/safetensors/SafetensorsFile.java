package io.moe4j.safetensors;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One safetensors file, memory-mapped whole: tensors are slices of the mapping ({@code long} offsets, no heap
 * copy), valid until {@link #close()}. Opening validates the header completely, so a file that opens is one
 * whose every tensor can be read.
 */
public final class SafetensorsFile implements AutoCloseable {
    private final Path path;
    private final Arena arena;
    private final MemorySegment data;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;

    private SafetensorsFile(Path path, Arena arena, MemorySegment data, List<TensorInfo> tensors, Map<String, String> metadata) {
        this.path = path;
        this.arena = arena;
        this.data = data;
        Map<String, TensorInfo> byName = new LinkedHashMap<>();
        for (TensorInfo t : tensors) {
            byName.put(t.name(), t);
        }
        this.tensors = java.util.Collections.unmodifiableMap(byName);
        this.metadata = metadata;
    }

    public static SafetensorsFile open(Path path) {
        Arena arena = Arena.ofShared();
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < 8) {
                throw new SafetensorsException(path, "file is " + size + " bytes, too short for the 8-byte header length");
            }
            MemorySegment whole = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            long headerLength = whole.get(ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0);
            if (headerLength < 0 || headerLength > HeaderParser.MAX_HEADER_BYTES) {
                throw new SafetensorsException(path, "header length " + Long.toUnsignedString(headerLength)
                        + " exceeds the " + HeaderParser.MAX_HEADER_BYTES + "-byte limit");
            }
            if (8 + headerLength > size) {
                throw new SafetensorsException(path, "header length " + headerLength + " runs past the end of the "
                        + size + "-byte file");
            }
            byte[] headerBytes = whole.asSlice(8, headerLength).toArray(ValueLayout.JAVA_BYTE);
            long dataStart = 8 + headerLength;
            HeaderParser.Header header = HeaderParser.parse(path, headerBytes, size - dataStart);
            return new SafetensorsFile(path, arena, whole.asSlice(dataStart), header.tensors(), header.metadata());
        } catch (NoSuchFileException e) {
            arena.close();
            throw new SafetensorsException(path, "no such file");
        } catch (IOException e) {
            arena.close();
            throw new SafetensorsException(path, "cannot read: " + e.getMessage());
        } catch (RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    /** Tensor headers in file order. */
    public Map<String, TensorInfo> tensors() {
        return tensors;
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    public Optional<Tensor> find(String name) {
        TensorInfo info = tensors.get(name);
        return info == null ? Optional.empty() : Optional.of(new Tensor(path, info, data.asSlice(info.begin(), info.byteSize())));
    }

    public Tensor tensor(String name) {
        return find(name).orElseThrow(() -> new SafetensorsException(path, name, "not found in this file"));
    }

    @Override
    public void close() {
        arena.close();
    }
}

package io.moe4j.quant;

import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/** Test fixtures: a conformance case copied into a temporary directory with some tensors dropped or replaced. */
public final class Fixtures {
    private Fixtures() {
    }

    /** A replacement tensor. */
    public record Replacement(DType dtype, long[] shape, byte[] data) {
    }

    /**
     * Copies case {@code name} (config.json and model.safetensors) into {@code dir}: tensors whose name is a key of
     * {@code replace} are replaced by the value, or dropped when the value is null.
     */
    public static Path copyCase(String name, Path dir, Map<String, Replacement> replace) {
        Path src = Cases.dir(name);
        try {
            Files.copy(src.resolve("config.json"), dir.resolve("config.json"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        try (Checkpoint c = Checkpoint.open(src)) {
            SafetensorsWriter w = new SafetensorsWriter();
            for (TensorInfo info : c.infos()) {
                if (replace.containsKey(info.name())) {
                    Replacement r = replace.get(info.name());
                    if (r != null) {
                        w.add(info.name(), r.dtype(), r.shape(), r.data());
                    }
                    continue;
                }
                MemorySegment seg = c.tensor(info.name()).segment();
                w.add(info.name(), info.dtype(), info.shape(), seg);
            }
            w.write(dir.resolve("model.safetensors"));
        }
        return dir;
    }
}

package io.moe4j.quant.method;

import io.moe4j.memory.UnzeroedMemory;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.List;

/** Copies of tensor bytes into segments of a load's arena: concatenated as they are, or widened to float32. */
final class TensorCopies {
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final long ALIGN = 64;

    private TensorCopies() {
    }

    /**
     * Concatenates the tensors' bytes into one segment of the arena (not zeroed first: every byte is copied over;
     * zeroing new memory, mostly this copy's, was a fifth of JFR's samples of qwen3-30b-a3b FP8's CPU load).
     */
    static MemorySegment concat(Arena arena, List<Tensor> parts, LoadProgress progress) {
        long total = 0;
        for (Tensor t : parts) {
            total += t.segment().byteSize();
        }
        MemorySegment out = UnzeroedMemory.allocate(arena, total, ALIGN);
        long at = 0;
        for (Tensor t : parts) {
            long n = t.segment().byteSize();
            MemorySegment.copy(t.segment(), 0, out, at, n);
            at += n;
            progress.add(n);
        }
        return out;
    }

    /** Float elements of the tensors (BF16, F16, F32), concatenated into a float32 segment of the arena. */
    static MemorySegment toF32(Arena arena, List<Tensor> parts, LoadProgress progress) {
        long total = 0;
        for (Tensor t : parts) {
            total += t.elementCount();
        }
        MemorySegment out = arena.allocate(total * 4, ALIGN);
        long at = 0;
        for (Tensor t : parts) {
            long n = t.elementCount();
            if (t.dtype() == DType.F32) {
                MemorySegment.copy(t.segment(), 0, out, at * 4, n * 4);
            } else {
                for (long i = 0; i < n; i++) {
                    out.set(F32, (at + i) * 4, t.getFloat(i));
                }
            }
            at += n;
            progress.add(t.segment().byteSize());
        }
        return out;
    }
}

package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Optional;

import static io.moe4j.quant.method.TensorChecks.expect;

/** The tensors of one linear module ({@code module + "." + suffix}), as the linear methods read them. */
final class LinearTensors {
    static final DType[] FLOATS = {DType.BF16, DType.F16, DType.F32};

    private LinearTensors() {
    }

    static Tensor tensor(Checkpoint ckpt, String module, String suffix) {
        return ckpt.tensor(module + "." + suffix);
    }

    static Optional<Tensor> find(Checkpoint ckpt, String module, String suffix) {
        return ckpt.find(module + "." + suffix);
    }

    static Tensor expectTensor(Checkpoint ckpt, String module, String suffix, long[] shape, DType... dtypes) {
        return expect(tensor(ckpt, module, suffix), shape, dtypes);
    }

    /** A float tensor (BF16, F16, F32) as float32 in the arena: the mapped bytes themselves when already F32. */
    static MemorySegment f32(Tensor t, Arena arena) {
        if (t.dtype() == DType.F32) {
            return t.segment();
        }
        return TensorCopies.toF32(arena, List.of(t), new LoadProgress(null));
    }

    /**
     * A static activation scale (a scalar): missing, it fails as the seeds do for a static scheme whose checkpoint
     * lacks it.
     */
    static float staticScale(Checkpoint ckpt, String module, String suffix) {
        String name = module + "." + suffix;
        Tensor t = ckpt.find(name).orElseThrow(() -> new MoeException("the quantization config has static input "
                + "scales, but tensor '" + name + "' is missing from " + ckpt.root()));
        return TensorChecks.scalar(t);
    }
}

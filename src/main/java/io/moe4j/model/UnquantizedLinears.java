package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.backend.Workers;
import io.moe4j.config.ModelConfig;
import io.moe4j.model.linear.Linear;
import io.moe4j.model.linear.LinearFactory;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.util.List;

/**
 * A {@link LinearFactory} for checkpoints whose linears are stored unquantized (bf16, f16, f32). A module stored in
 * a quantized format is refused by name, never run wrong.
 */
public final class UnquantizedLinears implements LinearFactory {
    /** Tensor suffixes that only a quantized module has. */
    private static final List<String> QUANTIZED_COMPANIONS = List.of(".weight_scale", ".weight_scale_inv",
            ".weight_packed", ".weight_global_scale", ".input_scale", ".scales", ".blocks", ".qweight", ".g_idx");

    private final Checkpoint checkpoint;
    private final Parallel parallel;

    /**
     * @param parallel threads for the fast (cpu) form, or null for the exact (emulation) form; not closed here
     */
    public UnquantizedLinears(Checkpoint checkpoint, Parallel parallel) {
        this.checkpoint = checkpoint;
        this.parallel = parallel;
    }

    /**
     * The {@link LinearProvider} shape, so it can stand where the quantized factory goes: exact on the emulation
     * backend, SIMD on the model's workers otherwise.
     */
    public static LinearFactory factory(Checkpoint checkpoint, ModelConfig config, String backend, Workers workers) {
        if (backend.equals("emulation")) {
            return new UnquantizedLinears(checkpoint, null);
        }
        return new UnquantizedLinears(checkpoint, new Parallel(workers));
    }

    @Override
    public void close() {
    }

    @Override
    public Linear load(String module, int inFeatures, int outFeatures, boolean bias) {
        for (String suffix : QUANTIZED_COMPANIONS) {
            if (checkpoint.contains(module + suffix)) {
                throw quantized(module, module + suffix);
            }
        }
        Tensor weight = checkpoint.tensor(module + ".weight");
        if (!weight.dtype().isFloatingPoint() || weight.dtype().bits() < 16) {
            throw quantized(module, module + ".weight (" + weight.dtype() + ")");
        }
        weight.expectShape(outFeatures, inFeatures);
        float[] b = null;
        if (bias) {
            b = checkpoint.tensor(module + ".bias").expectShape(outFeatures).toFloatArray();
        }
        if (weight.dtype() != DType.BF16 && weight.dtype() != DType.F16 && weight.dtype() != DType.F32) {
            throw new MoeException(checkpoint.root() + ": " + module + ".weight has dtype " + weight.dtype()
                    + "; unquantized linears must be BF16, F16 or F32");
        }
        return new UnquantizedLinear(weight, b, inFeatures, outFeatures, parallel);
    }

    private MoeException quantized(String module, String evidence) {
        return new MoeException(checkpoint.root() + ": linear '" + module + "' is stored quantized (" + evidence
                + "); the unquantized linear factory cannot run it (needs the quantized linear factory)");
    }
}

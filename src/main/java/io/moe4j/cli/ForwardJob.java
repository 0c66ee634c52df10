package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.layer.MoeOutput;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;

import java.nio.file.Path;

/**
 * The work of {@code moe forward}: read [T, H] activations from a safetensors file, run one MoE layer, write
 * {@code output}, {@code topk_ids} and {@code topk_weights}. The conformance tests run exactly this.
 */
public final class ForwardJob {
    private ForwardJob() {
    }

    /** Reads a float [T, H] input tensor (F32, BF16 or F16). */
    public static float[] readInput(Path input, String tensorName, int hidden) {
        try (SafetensorsFile f = SafetensorsFile.open(input)) {
            Tensor t = f.find(tensorName).orElseThrow(() -> new MoeException(input + ": no tensor '" + tensorName
                    + "' (it has: " + String.join(", ", f.tensors().keySet()) + ")"));
            if (t.dtype() != DType.F32 && t.dtype() != DType.BF16 && t.dtype() != DType.F16) {
                throw new MoeException(input + ": tensor '" + tensorName + "' is " + t.dtype() + "; expected F32, BF16 or F16");
            }
            long[] shape = t.shape();
            if (shape.length != 2 || shape[1] != hidden) {
                throw new MoeException(input + ": tensor '" + tensorName + "' has shape " + java.util.Arrays.toString(shape)
                        + "; expected [tokens, " + hidden + "]");
            }
            return t.toFloatArray();
        }
    }

    public static MoeOutput run(MoeLayer layer, float[] x) {
        return layer.forward(x, x.length / layer.config().hidden());
    }

    public static void write(MoeOutput out, Path output) {
        int t = out.tokens();
        int k = out.routing().topK();
        new SafetensorsWriter()
                .addF32("output", new long[] {t, out.hidden()}, out.output())
                .addI32("topk_ids", new long[] {t, k}, out.routing().ids())
                .addF32("topk_weights", new long[] {t, k}, out.routing().weights())
                .write(output);
    }

    /** The whole job, as the CLI runs it. */
    public static MoeOutput run(Path model, int layerIndex, Path input, String inputTensor, Path output,
                                MoeLayerOptions options) {
        try (MoeLayer layer = MoeLayer.load(model, layerIndex, options)) {
            float[] x = readInput(input, inputTensor, layer.config().hidden());
            MoeOutput out = run(layer, x);
            if (output != null) {
                write(out, output);
            }
            return out;
        }
    }
}

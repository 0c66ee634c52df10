package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;

import java.nio.file.Path;

/**
 * The work of {@code moe logits}: read {@code input_ids} (I32 or I64 [T]), run the model over them as one prompt or
 * one token at a time through the KV cache, write {@code logits} F32 [T, V] for every position.
 */
public final class LogitsJob {
    public static final String INPUT_TENSOR = "input_ids";
    public static final String OUTPUT_TENSOR = "logits";

    private LogitsJob() {
    }

    /** The token ids of {@code input}, named in the error when the tensor is missing or of the wrong kind. */
    public static int[] readInputIds(Path input) {
        try (SafetensorsFile f = SafetensorsFile.open(input)) {
            Tensor t = f.find(INPUT_TENSOR).orElseThrow(() -> new MoeException(input + ": no tensor '" + INPUT_TENSOR
                    + "' (it has: " + String.join(", ", f.tensors().keySet()) + ")"));
            if (t.dtype() != DType.I32 && t.dtype() != DType.I64) {
                throw new MoeException(input + ": tensor '" + INPUT_TENSOR + "' is " + t.dtype() + "; expected I32 or I64");
            }
            if (t.shape().length != 1 || t.shape()[0] == 0) {
                throw new MoeException(input + ": tensor '" + INPUT_TENSOR + "' has shape "
                        + java.util.Arrays.toString(t.shape()) + "; expected [tokens] with at least one token");
            }
            try {
                return t.toIntArray();
            } catch (ArithmeticException e) {
                throw new MoeException(input + ": tensor '" + INPUT_TENSOR + "' holds an id outside the int range");
            }
        }
    }

    /** Logits [T, V] of every position, from one pass or from T single-token steps. */
    public static float[] logits(Model model, int[] ids, boolean incremental) {
        try (Session session = model.newSession()) {
            if (!incremental) {
                return session.prefill(ids);
            }
            int v = model.vocabSize();
            float[] all = new float[Math.multiplyExact(ids.length, v)];
            for (int t = 0; t < ids.length; t++) {
                System.arraycopy(session.decode(ids[t]), 0, all, t * v, v);
            }
            return all;
        }
    }

    /** What one run did: positions written, seconds to load the model and to compute the logits. */
    public record Result(int positions, double loadSeconds, double runSeconds) {
    }

    /** The whole job, as the CLI runs it. */
    public static Result run(Path modelDir, Path input, Path output, ModelOptions options, boolean incremental) {
        int[] ids = readInputIds(input);
        long start = System.nanoTime();
        try (Model model = Model.load(modelDir, options)) {
            long loaded = System.nanoTime();
            System.getLogger(LogitsJob.class.getName()).log(System.Logger.Level.INFO, model.describe());
            float[] logits = logits(model, ids, incremental);
            long done = System.nanoTime();
            new SafetensorsWriter().addF32(OUTPUT_TENSOR, new long[] {ids.length, model.vocabSize()}, logits).write(output);
            return new Result(ids.length, (loaded - start) / 1e9, (done - loaded) / 1e9);
        }
    }
}

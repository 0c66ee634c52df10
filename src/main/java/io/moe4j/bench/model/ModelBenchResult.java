package io.moe4j.bench.model;

import java.util.List;
import java.util.Locale;

/**
 * One whole-model bench run.
 *
 * @param layers          layers of the model as written and run
 * @param modelLayers     layers of the real model
 * @param experts         routed experts a MoE layer of the model as written
 * @param modelExperts    routed experts of the real model
 * @param bytesPerToken   checkpoint bytes a decode step reads ({@link TokenBytes}) in the model as run
 * @param effectiveGbps   bytesPerToken over the median decode step
 * @param machineGbps     the machine's read bandwidth, measured in the same run with the same threads
 * @param prefillTokensPerS the prompt's prefill once the prompt kernels are compiled (its second pass)
 * @param firstPrefillTokensPerS the same prompt's first pass in the process (compilation included)
 * @param fullBytesPerToken bytes a decode step of the whole real model reads
 * @param cpuShare        the process's CPU time over the timed decode steps, over their wall time times threads:
 *                        well below 1, other programs had the cores (or the workers waited)
 * @param projectedTokensPerS the whole real model's decode tokens/s at this run's effective bandwidth (an estimate
 *                          when layers or experts were limited)
 * @param batches         batched decode's timings, by batch size (none unless asked for)
 */
public record ModelBenchResult(String preset, String scheme, String backend, int threads, int layers, int modelLayers,
                               int experts, int modelExperts, int decodeTokens, double decodeMsPerToken,
                               double decodeTokensPerS, int promptTokens, double prefillTokensPerS,
                               double firstPrefillTokensPerS, TokenBytes bytes, double effectiveGbps, double machineGbps, long fullBytesPerToken,
                               double projectedTokensPerS, double cpuShare, List<ModelBench.BatchTiming> batches) {
    public ModelBenchResult {
        batches = List.copyOf(batches);
    }

    public long bytesPerToken() {
        return bytes.total();
    }

    public double ratio() {
        return effectiveGbps / machineGbps;
    }

    /** Whether the model run is smaller than the real one. */
    public boolean limited() {
        return layers < modelLayers || experts < modelExperts;
    }

    /** One JSON object on one line. */
    public String json() {
        return String.format(Locale.ROOT,
                "{\"model_preset\":\"%s\",\"scheme\":\"%s\",\"backend\":\"%s\",\"threads\":%d,\"layers\":%d,"
                        + "\"model_layers\":%d,\"experts\":%d,\"model_experts\":%d,\"decode_tokens\":%d,"
                        + "\"decode_ms_per_token\":%.3f,\"decode_tokens_per_s\":%.3f,\"prompt_tokens\":%d,"
                        + "\"prefill_tokens_per_s\":%.3f,\"prefill_first_pass_tokens_per_s\":%.3f,"
                        + "\"bytes_per_token\":%d,\"bytes\":{\"embedding_row\":%d,"
                        + "\"attention\":%d,\"experts\":%d,\"dense\":%d,\"norms\":%d,\"lm_head\":%d},"
                        + "\"effective_gbps\":%.3f,\"machine_gbps\":%.3f,\"ratio\":%.4f,"
                        + "\"full_model_bytes_per_token\":%d,\"projected_full_model_tokens_per_s\":%.3f,"
                        + "\"decode_cpu_share\":%.3f,\"batches\":[%s]}",
                preset, scheme, backend, threads, layers, modelLayers, experts, modelExperts, decodeTokens,
                decodeMsPerToken, decodeTokensPerS, promptTokens, prefillTokensPerS, firstPrefillTokensPerS,
                bytes.total(), bytes.embeddingRow(),
                bytes.attention(), bytes.experts(), bytes.dense(), bytes.norms(), bytes.lmHead(), effectiveGbps,
                machineGbps, ratio(), fullBytesPerToken, projectedTokensPerS, cpuShare, batchesJson());
    }

    private String batchesJson() {
        StringBuilder b = new StringBuilder();
        for (ModelBench.BatchTiming t : batches) {
            b.append(b.isEmpty() ? "" : ",").append(String.format(Locale.ROOT,
                    "{\"batch\":%d,\"steps\":%d,\"ms_per_step\":%.3f,\"tokens_per_s\":%.3f}", t.batch(),
                    t.stepSeconds().length, t.medianStepSeconds() * 1e3, t.tokensPerS()));
        }
        return b.toString();
    }

    /** A few lines for people. */
    public String text() {
        StringBuilder b = new StringBuilder();
        b.append(String.format(Locale.ROOT, "%s (%s) on %s, %d threads%n", preset, scheme, backend, threads));
        if (limited()) {
            b.append(String.format(Locale.ROOT, "  model limited to %d of %d layers, %d of %d experts a layer (memory"
                    + " budget or --layers / --experts); the figures are of the model as run%n", layers, modelLayers, experts,
                    modelExperts));
        }
        b.append(String.format(Locale.ROOT, "  decode (batch 1, median of %d): %.1f ms/token, %.2f tokens/s (the "
                + "process had %.0f%% of %d cores' time)%n", decodeTokens, decodeMsPerToken, decodeTokensPerS,
                100 * cpuShare, threads));
        b.append(String.format(Locale.ROOT, "  prefill (%d tokens): %.1f tokens/s (the process's first pass, kernels "
                + "compiling: %.1f)%n", promptTokens, prefillTokensPerS, firstPrefillTokensPerS));
        for (ModelBench.BatchTiming t : batches) {
            b.append(String.format(Locale.ROOT, "  decode batch %d (median of %d steps): %.1f ms a step, %.2f tokens/s"
                    + " (%.2f a sequence)%n", t.batch(), t.stepSeconds().length, t.medianStepSeconds() * 1e3,
                    t.tokensPerS(), 1 / t.medianStepSeconds()));
        }
        b.append(String.format(Locale.ROOT, "  bytes a token reads: %.1f MB (experts %.1f, attention %.1f, dense %.1f,"
                        + " lm_head %.1f, norms %.3f, embedding row %.3f)%n", bytes.total() / 1e6,
                bytes.experts() / 1e6, bytes.attention() / 1e6, bytes.dense() / 1e6, bytes.lmHead() / 1e6,
                bytes.norms() / 1e6, bytes.embeddingRow() / 1e6));
        b.append(String.format(Locale.ROOT, "  effective %.2f GB/s of %.2f GB/s measured %s: %.2f%n",
                effectiveGbps, machineGbps, backend.equals("cuda") ? "device copy bandwidth" : "read bandwidth",
                ratio()));
        if (limited()) {
            b.append(String.format(Locale.ROOT, "  whole model: %.1f MB a token, so about %.2f tokens/s at this "
                    + "effective bandwidth (an estimate)%n", fullBytesPerToken / 1e6, projectedTokensPerS));
        }
        return b.toString();
    }
}

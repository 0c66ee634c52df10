package io.moe4j.bench;

import java.util.Locale;

/**
 * One measured configuration.
 *
 * @param weightBytes    packed weight and scale bytes of the distinct experts a call routed to (mean over calls)
 * @param effectiveGbps  weight bytes over time: how close the layer gets to streaming its weights at memory speed
 * @param machineGbps    the machine's measured read bandwidth with the same threads
 */
public record BenchResult(String preset, String scheme, String backend, int tokens, int threads, String routing,
                          double msPerCall, double tokensPerS, double gflops, long weightBytes, double effectiveGbps,
                          double machineGbps) {

    /** One JSON object on one line, with exactly the documented keys. */
    public String json() {
        return String.format(Locale.ROOT,
                "{\"preset\":\"%s\",\"scheme\":\"%s\",\"backend\":\"%s\",\"tokens\":%d,\"threads\":%d,"
                        + "\"routing\":\"%s\",\"ms_per_call\":%.4f,\"tokens_per_s\":%.2f,\"gflops\":%.3f,"
                        + "\"weight_bytes\":%d,\"effective_gbps\":%.3f,\"machine_gbps\":%.3f}",
                preset, scheme, backend, tokens, threads, routing, msPerCall, tokensPerS, gflops, weightBytes,
                effectiveGbps, machineGbps);
    }

    public static String tableHeader() {
        return String.format(Locale.ROOT, "%-14s %-10s %-9s %6s %4s %-6s %10s %11s %9s %10s %9s %9s %6s",
                "preset", "scheme", "backend", "tokens", "thr", "route", "ms/call", "tokens/s", "GFLOP/s",
                "weights MB", "eff GB/s", "mach GB/s", "ratio");
    }

    public String tableRow() {
        return String.format(Locale.ROOT, "%-14s %-10s %-9s %6d %4d %-6s %10.3f %11.1f %9.2f %10.1f %9.2f %9.2f %6.2f",
                preset, scheme, backend, tokens, threads, routing, msPerCall, tokensPerS, gflops, weightBytes / 1e6,
                effectiveGbps, machineGbps, effectiveGbps / machineGbps);
    }
}

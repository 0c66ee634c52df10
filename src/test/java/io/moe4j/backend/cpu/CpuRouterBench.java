package io.moe4j.backend.cpu;

import io.moe4j.bench.RouterPreset;
import io.moe4j.routing.Router;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Times one routing call, the host {@link Router} against {@link CpuRouter} (the kernels this JVM selects, and the
 * scalar ones), on the routers of gpt-oss-20b (32 experts, H 2880, top-4), qwen3-30b-a3b (128, H 2048, top-8) and
 * DeepSeek-V3 (256 in 8 groups, H 7168, top-8): wall time per call with float[] in and the Routing out, medians of
 * interleaved rounds (this machine's speed drifts), and whether each chose the host's experts. The host is skipped
 * where one call would take over a second.
 *
 * <p>Usage: {@code CpuRouterBench [tokens,...]}, default {@code 1,16,256}.
 */
public final class CpuRouterBench {

    private CpuRouterBench() {
    }

    public static void main(String[] args) {
        int[] tokenCounts = args.length > 0 ? Arrays.stream(args[0].split(",")).mapToInt(Integer::parseInt).toArray()
                : new int[] {1, 16, 256};
        List<RouterPreset> shapes = RouterPreset.families();
        for (RouterPreset s : shapes) {
            SplittableRandom rnd = new SplittableRandom(2026);
            int e = s.spec().numExperts();
            Router host = s.randomRouter(rnd);
            try (TokenRouter cpu = new CpuBackend().prepareRouter(host);
                    TokenRouter scalar = new CpuRouter(host, new ScalarRouterLogits(host))) {
                if (s == shapes.get(0)) {
                    System.out.println("cpu router: " + cpu.where());
                    System.out.printf("%-14s %6s %12s %12s %12s %8s %10s %s%n", "router", "T", "host us", "scalar us",
                            "cpu us", "ratio", "cpu GMAC/s", "same experts");
                }
                for (int tokens : tokenCounts) {
                    float[] x = RouterPreset.gaussian(rnd, tokens * s.hidden(), 1.0);
                    double macs = (double) tokens * e * s.hidden();
                    boolean runHost = macs / 1e9 < 1; // ~1 GMAC/s scalar float64
                    Routing want = runHost ? host.route(x, tokens) : null;
                    Routing got = cpu.route(x, tokens);
                    Routing gotScalar = scalar.route(x, tokens);
                    double[] us = medians(new Runnable[] {
                        runHost ? () -> host.route(x, tokens) : null,
                        () -> scalar.route(x, tokens),
                        () -> cpu.route(x, tokens)},
                            new double[] {macs / 1e9, macs / 2e9, macs / 8e9});
                    String same = want == null ? String.valueOf(Arrays.equals(got.ids(), gotScalar.ids()))
                            + " (vs scalar)" : String.valueOf(Arrays.equals(got.ids(), want.ids())
                            && Arrays.equals(gotScalar.ids(), want.ids()));
                    System.out.printf("%-14s %6d %12.1f %12.1f %12.1f %8.1f %10.2f %s%n", s.name(), tokens, us[0],
                            us[1], us[2], us[0] / us[2], macs / us[2] / 1e3, same);
                }
            }
        }
    }

    /**
     * Median microseconds per call of each (null: skipped, NaN), over 7 rounds that take turns: each round runs every
     * call about 40 ms' worth (at least once), after a warm-up round.
     */
    private static double[] medians(Runnable[] calls, double[] secondsPerCall) {
        int rounds = 7;
        int[] n = new int[calls.length];
        double[][] us = new double[calls.length][rounds];
        for (int i = 0; i < calls.length; i++) {
            n[i] = (int) Math.max(1, Math.min(20_000, 0.04 / Math.max(secondsPerCall[i], 1e-7)));
        }
        for (int r = -1; r < rounds; r++) {
            for (int i = 0; i < calls.length; i++) {
                if (calls[i] == null) {
                    continue;
                }
                long t0 = System.nanoTime();
                for (int j = 0; j < n[i]; j++) {
                    calls[i].run();
                }
                if (r >= 0) {
                    us[i][r] = (System.nanoTime() - t0) / 1e3 / n[i];
                }
            }
        }
        double[] out = new double[calls.length];
        for (int i = 0; i < calls.length; i++) {
            Arrays.sort(us[i]);
            out[i] = calls[i] == null ? Double.NaN : us[i][rounds / 2];
        }
        return out;
    }

}

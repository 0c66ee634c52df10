package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.bench.RouterPreset;
import io.moe4j.routing.Router;
import io.moe4j.routing.Routing;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;

/**
 * Times one routing call, the host {@link Router} against {@link CudaRouter}, on the routers of gpt-oss-20b
 * (32 experts, H 2880, top-4), qwen3-30b-a3b (128, H 2048, top-8) and DeepSeek-V3 (256 in 8 groups, H 7168, top-8):
 * wall time per call with float[] in and the Routing out (the device's copies and synchronization included), median
 * of rounds, the GPU time of the device's two kernels alone, and whether both chose the same experts. The host is
 * skipped where one call would take over a second.
 *
 * <p>Usage: {@code CudaRouterBench [tokens,...]}, default {@code 1,16,256,4096}.
 */
public final class CudaRouterBench {

    private CudaRouterBench() {
    }

    public static void main(String[] args) {
        int[] tokenCounts = args.length > 0 ? Arrays.stream(args[0].split(",")).mapToInt(Integer::parseInt).toArray()
                : new int[] {1, 16, 256, 4096};
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            System.out.println("CUDA unavailable: " + probe.reason());
            System.exit(2);
        }
        System.out.println("device: " + probe.reason());
        List<RouterPreset> shapes = RouterPreset.families();
        System.out.printf("%-14s %6s %12s %12s %8s %12s %s%n", "router", "T", "host us", "cuda us", "ratio",
                "kernels us", "same experts");
        CudaEngine engine = CudaEngine.shared();
        for (RouterPreset s : shapes) {
            SplittableRandom rnd = new SplittableRandom(2026);
            int e = s.spec().numExperts();
            Router host = s.randomRouter(rnd);
            boolean mapped = CudaTuning.fromSystemProperties().mappedTransfers();
            try (CudaRouter device = CudaRouter.upload(engine, host, mapped)) {
                for (int tokens : tokenCounts) {
                    float[] x = RouterPreset.gaussian(rnd, tokens * s.hidden(), 1.0);
                    double hostUs = Double.NaN;
                    Routing want = null;
                    double hostCallSeconds = (double) tokens * e * s.hidden() / 1e9; // ~1 GMAC/s scalar float64
                    if (hostCallSeconds < 1) {
                        want = host.route(x, tokens);
                        hostUs = median(() -> host.route(x, tokens), hostCallSeconds);
                    }
                    Routing got = device.route(x, tokens);
                    double deviceUs = median(() -> device.route(x, tokens), 1e-4);
                    double kernelsUs = kernelMicros(engine, device, x, tokens);
                    String same = want == null ? "-" : String.valueOf(Arrays.equals(got.ids(), want.ids()));
                    System.out.printf("%-14s %6d %12.1f %12.1f %8.1f %12.1f %s%n", s.name(), tokens, hostUs,
                            deviceUs, hostUs / deviceUs, kernelsUs, same);
                }
            }
        }
    }

    /**
     * Median GPU time of the two routing kernels, microseconds: events around them, behind a busy wait so that the
     * host's submission is not in the span.
     */
    private static double kernelMicros(CudaEngine engine, CudaRouter device, float[] x, int tokens) {
        BusyLead lead = new BusyLead(engine);
        try (CudaEvent start = engine.context().createEvent(); CudaEvent end = engine.context().createEvent()) {
            double[] us = new double[21];
            for (int i = 0; i < us.length; i++) {
                device.route(x, tokens, start, end, lead::enqueue);
                us[i] = end.elapsedMillisSince(start) * 1e3;
            }
            Arrays.sort(us);
            return us[us.length / 2];
        }
    }

    /** Median microseconds of rounds after a warm-up, about 0.3 s of calls in all (at least 5 rounds). */
    private static double median(Runnable call, double secondsPerCall) {
        int calls = (int) Math.max(1, Math.min(2000, 0.05 / Math.max(secondsPerCall, 1e-6)));
        for (int i = 0; i < calls; i++) {
            call.run();
        }
        double[] rounds = new double[5];
        for (int r = 0; r < rounds.length; r++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                call.run();
            }
            rounds[r] = (System.nanoTime() - t0) / 1e3 / calls;
        }
        Arrays.sort(rounds);
        return rounds[rounds.length / 2];
    }

}

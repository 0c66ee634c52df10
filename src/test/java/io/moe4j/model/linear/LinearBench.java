package io.moe4j.model.linear;

import io.moe4j.bench.MemoryBandwidth;
import io.moe4j.format.Bf16;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Decode-step (one token) GEMVs of the cpu linears on weights far larger than the last-level cache: a bf16 matrix
 * (an lm_head slice or gpt-oss attention) and an FP8 128 × 128 block one (DeepSeek / Qwen3-FP8 attention), each
 * timed over repeated calls, reported as the median time and the weight bytes streamed per second beside the
 * machine's measured read bandwidth. Not run by the tests. Run with
 * <pre>
 *   mvn -o -q test-compile dependency:build-classpath -Dmdep.outputFile=cp.txt -Dmdep.includeScope=test
 *   java --add-modules jdk.incubator.vector -cp target/test-classes:target/classes:$(cat cp.txt) \
 *       io.moe4j.model.linear.LinearBench [rows] [cols] [threads...]
 * </pre>
 */
public final class LinearBench {
    private LinearBench() {
    }

    public static void main(String[] args) throws IOException {
        int rows = args.length > 0 ? Integer.parseInt(args[0]) : 16384;
        int cols = args.length > 1 ? Integer.parseInt(args[1]) : 2048;
        int[] threads = args.length > 2 ? Arrays.stream(args, 2, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[]{1, Runtime.getRuntime().availableProcessors()};
        Path dir = Files.createTempDirectory("moe4j-linear-bench");
        try (Arena arena = Arena.ofConfined()) {
            SplittableRandom r = new SplittableRandom(7);
            MemorySegment bf16 = arena.allocate(2L * rows * cols);
            MemorySegment fp8 = arena.allocate((long) rows * cols);
            ValueLayout.OfShort i16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < (long) rows * cols; i++) {
                bf16.set(i16, 2 * i, Bf16.fromFloat((float) (r.nextGaussian() * 0.02)));
                int code;
                do {
                    code = r.nextInt(256);
                } while ((code & 0x7F) == 0x7F);
                fp8.set(ValueLayout.JAVA_BYTE, i, (byte) code);
            }
            int rb = Math.ceilDiv(rows, 128);
            int cb = Math.ceilDiv(cols, 128);
            float[] scales = new float[rb * cb];
            Arrays.fill(scales, 1e-3f);
            SafetensorsWriter w = new SafetensorsWriter()
                    .add("dense.weight", DType.BF16, new long[]{rows, cols}, bf16)
                    .add("fp8.weight", DType.F8_E4M3, new long[]{rows, cols}, fp8)
                    .addF32("fp8.weight_scale_inv", new long[]{rb, cb}, scales);
            QuantizationConfig q = SyntheticCheckpoint.write(dir, """
                    {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
                     "modules_to_not_convert": ["dense"]}""", w);
            double bandwidth = MemoryBandwidth.measure(Runtime.getRuntime().availableProcessors(), 1L << 30, 3);
            System.out.printf("%d x %d, read bandwidth %.1f GB/s (all cores)%n", rows, cols, bandwidth);
            try (Checkpoint ckpt = Checkpoint.open(dir)) {
                for (int t : threads) {
                    try (LinearFactory f = Linears.factory(ckpt, q, Linears.Backend.CPU, t)) {
                        for (String module : new String[]{"dense", "fp8"}) {
                            long t0 = System.nanoTime();
                            LoadedLinear linear = (LoadedLinear) f.load(module, cols, rows, false);
                            System.out.printf("  load and repack: %.0f ms%n", (System.nanoTime() - t0) / 1e6);
                            time(linear, t);
                        }
                    }
                }
            }
        } finally {
            try (var s = Files.list(dir)) {
                for (Path p : s.toList()) {
                    Files.delete(p);
                }
            }
            Files.delete(dir);
        }
    }

    private static void time(LoadedLinear linear, int threads) {
        float[] x = new float[linear.inFeatures()];
        SplittableRandom r = new SplittableRandom(3);
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian();
        }
        float[] y = new float[linear.outFeatures()];
        for (int i = 0; i < 30; i++) {
            linear.forward(x, 1, y);
        }
        int n = 50;
        long[] ns = new long[n];
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            linear.forward(x, 1, y);
            ns[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ns);
        double median = ns[n / 2];
        System.out.printf("  %-60s threads %d: median %8.1f us, %6.2f GB/s (%d MB streamed)%n", linear.describe(),
                threads, median / 1e3, linear.weightBytes() / median, linear.weightBytes() / 1_000_000);
    }
}

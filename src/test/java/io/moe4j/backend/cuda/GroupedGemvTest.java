package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.offset;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Each grouped GEMV kernel against the float64 reference on fresh random packed inputs, at sizes that are not
 * multiples of the kernels' tiles: the engine's MXFP4 tensor-core GEMV, and the CUDA-core one of the test tree
 * ({@link RowGemv}) for every format it reads. Skipped (not failed) where {@link CudaRuntime#probe()} finds no usable GPU.
 */
class GroupedGemvTest {
    /** float32 accumulation of exact weight values lands near 1e-7; 1e-4 leaves room for long sums only. */
    private static final double TOLERANCE = 1e-4;
    private static final int NAN_BITS = 0x7FC00000;

    private static CudaContext context;
    private static Mxfp4Gemv mxfp4;
    private static GroupedGemv gemm;
    private static GroupedGemv simt;
    private static CudaStream stream;

    @BeforeAll
    static void open() {
        if (CudaRuntime.probe().available()) {
            context = CudaRuntime.open(0);
            mxfp4 = Mxfp4Gemv.create(context);
            gemm = GroupedGemv.tensorCores(mxfp4);
            simt = RowGemv.create(context);
            stream = context.createStream();
        }
    }

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    @AfterAll
    static void close() {
        if (context != null) {
            stream.close();
            gemm.close();
            simt.close();
            context.close();
        }
    }

    /** Uploads, runs once into a NaN-poisoned output, and returns the result. */
    static float[] run(GroupedGemv g, RowStack w, float[] x, int xRows, int[] experts, int[] rows) {
        int pairs = experts.length;
        try (Arena arena = Arena.ofConfined();
                GroupedGemv.Weights dw = g.upload(w);
                DeviceBuffer dx = context.allocate(4L * x.length);
                DeviceBuffer routes = context.allocate(Routes.bytes(pairs));
                DeviceBuffer out = context.allocate(4L * pairs * w.rows())) {
            dx.copyFrom(arena.allocateFrom(JAVA_FLOAT, x));
            routes.copyFrom(Routes.pack(arena, experts, rows, w.experts(), xRows));
            out.fillWords(NAN_BITS, 0, (long) pairs * w.rows());
            g.forward(dw, dx, routes, 0, pairs, out, stream);
            stream.synchronize();
            MemorySegment host = arena.allocate(out.byteSize());
            out.copyTo(host);
            return host.toArray(JAVA_FLOAT);
        }
    }

    private static void assertMatchesReference(GroupedGemv g, RowStack w, int xRows, int pairs, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = RandomExperts.activations(rnd, xRows, w.cols());
        int[] experts = RandomExperts.ints(rnd, pairs, w.experts());
        int[] rows = RandomExperts.ints(rnd, pairs, xRows);

        float[] got = run(g, w, x, xRows, experts, rows);
        double[] want = ReferenceDecoders.groupedGemv(w, x, experts, rows);

        assertThat(got).as("every output written (no NaN poison left)").doesNotContain(Float.NaN);
        assertThat(ReferenceDecoders.relativeL2(got, want)).as("relative L2 vs float64").isLessThan(TOLERANCE);
    }

    /** The MXFP4 cases run on both kernels: tensor cores (the default) and CUDA cores. */
    static GroupedGemv mxfp4Kernel(boolean tensorCores) {
        return tensorCores ? gemm : simt;
    }

    @ParameterizedTest(name = "tensorCores={0}")
    @ValueSource(booleans = {true, false})
    void mxfp4OddShapes(boolean tensorCores) {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(1), 5, 77, 32 * 37, 118, 136);
            assertMatchesReference(mxfp4Kernel(tensorCores), w, 3, 7, 11);
        }
    }

    @ParameterizedTest(name = "tensorCores={0}")
    @ValueSource(booleans = {true, false})
    void mxfp4GptOssDownProjectionShape(boolean tensorCores) {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(2), 3, 2880, 2880, 118, 130);
            assertMatchesReference(mxfp4Kernel(tensorCores), w, 1, 2, 12);
        }
    }

    @ParameterizedTest(name = "tensorCores={0}")
    @ValueSource(booleans = {true, false})
    void mxfp4ExtremeScalesIncludingSubnormalTwoToMinus127(boolean tensorCores) {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(3), 2, 40, 96, 0, 3);
            assertMatchesReference(mxfp4Kernel(tensorCores), w, 2, 3, 13);
            RowStack big = RandomExperts.mxfp4(arena, new SplittableRandom(4), 2, 40, 96, 200, 240);
            assertMatchesReference(mxfp4Kernel(tensorCores), big, 2, 3, 14);
        }
    }

    @ParameterizedTest(name = "tensorCores={0}")
    @ValueSource(booleans = {true, false})
    void mxfp4ActivationsOfVeryDifferentMagnitudes(boolean tensorCores) {
        // The tensor-core kernel scales x by a power of two and splits it into fp16 parts: tiny and huge rows
        // and a row mixing 1e-6 with 1e4 must all keep float32 accuracy.
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(5), 2, 48, 320, 120, 134);
            SplittableRandom rnd = new SplittableRandom(55);
            float[] x = RandomExperts.activations(rnd, 3, 320);
            for (int i = 0; i < 320; i++) {
                x[i] *= 1e-30f;
                x[320 + i] *= 1e30f;
                x[640 + i] *= (i % 2 == 0) ? 1e-6f : 1e4f;
            }
            int[] experts = {0, 1, 1, 0, 1, 0};
            int[] rows = {0, 0, 1, 1, 2, 2};
            float[] got = run(mxfp4Kernel(tensorCores), w, x, 3, experts, rows);
            double[] want = ReferenceDecoders.groupedGemv(w, x, experts, rows);
            for (int p = 0; p < experts.length; p++) {
                float[] g = java.util.Arrays.copyOfRange(got, p * 48, p * 48 + 48);
                double[] r = java.util.Arrays.copyOfRange(want, p * 48, p * 48 + 48);
                assertThat(ReferenceDecoders.relativeL2(g, r)).as("pair %d", p).isLessThan(TOLERANCE);
            }
        }
    }

    @Test
    void mxfp4PiecesOfPairsOfOneExpertMatchTheReference() {
        // Pairs sorted by expert in pieces of 1..4 (expert 0 has five: a piece of four and one of one), x rows of
        // very different magnitudes (each pair of a piece has its own power-of-two scale).
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(21), 4, 77, 32 * 45, 118, 136);
            SplittableRandom rnd = new SplittableRandom(22);
            int xRows = 5;
            float[] x = RandomExperts.activations(rnd, xRows, w.cols());
            float[] magnitude = {1f, 1e-20f, 1e20f, 3e-3f, 7f};
            for (int i = 0; i < x.length; i++) {
                x[i] *= magnitude[i / w.cols()];
            }
            int[] experts = {0, 0, 0, 0, 0, 1, 1, 2, 3, 3, 3};
            int[] rows = RandomExperts.ints(rnd, experts.length, xRows);
            int[] pieces = {0, 0, 4, 0, 0, 4, 1, 0, 1, 5, 2, 0, 2, 7, 1, 0, 3, 8, 3, 0};
            int pairs = experts.length;
            try (Mxfp4Tiles dw = mxfp4.upload(w.mxfp4());
                    DeviceBuffer dx = context.allocate(4L * x.length);
                    DeviceBuffer routes = context.allocate(Routes.bytes(pairs));
                    DeviceBuffer dpieces = context.allocate(4L * pieces.length);
                    DeviceBuffer out = context.allocate(4L * pairs * w.rows())) {
                dx.copyFrom(arena.allocateFrom(JAVA_FLOAT, x));
                routes.copyFrom(Routes.pack(arena, experts, rows, w.experts(), xRows));
                dpieces.copyFrom(arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_INT, pieces));
                out.fillWords(NAN_BITS, 0, (long) pairs * w.rows());
                mxfp4.forwardPieces(dw, dx, routes, 0, pairs, dpieces.pointer(), pieces.length / 4, out, stream);
                stream.synchronize();
                MemorySegment host = arena.allocate(out.byteSize());
                out.copyTo(host);
                float[] got = host.toArray(JAVA_FLOAT);
                double[] want = ReferenceDecoders.groupedGemv(w, x, experts, rows);
                assertThat(got).as("every output written").doesNotContain(Float.NaN);
                for (int p = 0; p < pairs; p++) {
                    float[] g = java.util.Arrays.copyOfRange(got, p * w.rows(), (p + 1) * w.rows());
                    double[] r = java.util.Arrays.copyOfRange(want, p * w.rows(), (p + 1) * w.rows());
                    assertThat(ReferenceDecoders.relativeL2(g, r)).as("pair %d", p).isLessThan(TOLERANCE);
                }
            }
        }
    }

    @Test
    void piecesTakeRowsThatFitInSharedMemoryOnly() {
        try (Arena arena = Arena.ofConfined();
                Mxfp4Tiles gptOss = mxfp4.upload(RandomExperts.mxfp4(arena, new SplittableRandom(23), 1, 16, 2880,
                        120, 130).mxfp4());
                Mxfp4Tiles mixtralDown = mxfp4.upload(RandomExperts.mxfp4(arena, new SplittableRandom(24), 1, 16,
                        14336, 120, 130).mxfp4())) {
            assertThat(mxfp4.piecesFit(gptOss)).isTrue();
            assertThat(mxfp4.piecesFit(mixtralDown)).isFalse();
        }
    }

    @ParameterizedTest(name = "tensorCores={0}")
    @ValueSource(booleans = {true, false})
    void mxfp4ScaleByte255IsNaNForItsRowOnly(boolean tensorCores) {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.mxfp4(arena, new SplittableRandom(5), 1, 33, 64, 120, 130);
            int nanRow = 17;
            w.scales().set(JAVA_BYTE, nanRow * 2L + 1, (byte) 255);
            float[] x = RandomExperts.activations(new SplittableRandom(6), 1, 64);

            float[] got = run(mxfp4Kernel(tensorCores), w, x, 1, new int[] {0}, new int[] {0});
            double[] want = ReferenceDecoders.groupedGemv(w, x, new int[] {0}, new int[] {0});

            for (int n = 0; n < 33; n++) {
                if (n == nanRow) {
                    assertThat(got[n]).isNaN();
                } else {
                    assertThat((double) got[n]).isCloseTo(want[n], offset(1e-4 * Math.abs(want[n]) + 1e-30));
                }
            }
        }
    }

    @Test
    void bf16OddK() {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.bf16(arena, new SplittableRandom(7), 3, 45, 1001);
            assertMatchesReference(simt, w, 2, 5, 17);
        }
    }

    @Test
    void fp8OddK() {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.fp8(arena, new SplittableRandom(8), 4, 51, 999);
            assertMatchesReference(simt, w, 3, 6, 18);
        }
    }

    @Test
    void fp8NaNCodePropagates() {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.fp8(arena, new SplittableRandom(9), 1, 9, 40);
            w.codes().set(JAVA_BYTE, 4 * 40 + 7, (byte) 0x7F);
            float[] got = run(simt, w, RandomExperts.activations(new SplittableRandom(10), 1, 40), 1,
                    new int[] {0}, new int[] {0});
            assertThat(got[4]).isNaN();
            assertThat(got[3]).isFinite();
        }
    }

    @Test
    void int4GroupedScales() {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.int4(arena, new SplittableRandom(11), 3, 50, 1056, 96);
            assertMatchesReference(simt, w, 2, 5, 21);
        }
    }

    @Test
    void int4OneScalePerRowWithKNotAMultipleOf32() {
        try (Arena arena = Arena.ofConfined()) {
            RowStack w = RandomExperts.int4(arena, new SplittableRandom(12), 2, 37, 1002, 1002);
            assertMatchesReference(simt, w, 2, 4, 22);
        }
    }

    @Test
    void otherTilingsComputeTheSameFunction() {
        KernelCompiler compiler = KernelCompiler.forDevice(context.device());
        try (Arena arena = Arena.ofConfined();
                GroupedGemv odd = new RowGemv(context, compiler, 3, 2);
                GroupedGemv mma3 = GroupedGemv.tensorCores(Mxfp4Gemv.create(context, compiler, new GemvTuning(3, 1, 2)));
                GroupedGemv mma1 = GroupedGemv.tensorCores(Mxfp4Gemv.create(context, compiler, new GemvTuning(1, 3, 5)))) {
            assertMatchesReference(mma3, RandomExperts.mxfp4(arena, new SplittableRandom(17), 3, 77, 32 * 13, 120, 134), 2, 5, 35);
            assertMatchesReference(mma1, RandomExperts.mxfp4(arena, new SplittableRandom(18), 3, 77, 32 * 13, 120, 134), 2, 5, 36);
            assertMatchesReference(odd, RandomExperts.mxfp4(arena, new SplittableRandom(13), 3, 77, 32 * 5, 120, 134), 2, 5, 31);
            assertMatchesReference(odd, RandomExperts.bf16(arena, new SplittableRandom(14), 3, 29, 77), 2, 5, 32);
            assertMatchesReference(odd, RandomExperts.fp8(arena, new SplittableRandom(15), 3, 29, 77), 2, 5, 33);
            assertMatchesReference(odd, RandomExperts.int4(arena, new SplittableRandom(16), 3, 29, 192, 64), 2, 5, 34);
        }
    }
}

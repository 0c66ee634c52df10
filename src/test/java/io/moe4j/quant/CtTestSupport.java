package io.moe4j.quant;

import io.moe4j.config.Projection;
import io.moe4j.quant.method.CtQuantArgs;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** Helpers of the compressed-tensors method tests: hand decoding of the raw checkpoint tensors. */
class CtTestSupport {

    static final float[] E2M1 = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, -0f, -0.5f, -1, -1.5f, -2, -3, -4, -6};

    /** FP8 E4M3FN decoded by hand (bias 7, S.1111.111 is NaN). */
    static double e4m3(int code) {
        code &= 0xFF;
        if ((code & 0x7F) == 0x7F) {
            return Double.NaN;
        }
        return QuarkMethodsTest.minifloat(code, 4, 3, 7);
    }

    static byte u8(Tensor t, long i) {
        return t.segment().get(ValueLayout.JAVA_BYTE, i);
    }

    static void assertClose(float[] actual, double[] expected, String what) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat((double) actual[i]).as("%s col %d", what, i)
                    .isCloseTo(expected[i], within(Math.abs(expected[i]) * 1e-6 + 1e-30));
        }
    }

    Tensor t(Cases.Opened c, int e, Projection p, String suffix) {
        return c.checkpoint().tensor(c.layer().experts().tensor(e, p, suffix));
    }

    /** Checks rows of w13 (gate rows, then up rows) and w2 against a hand decoding of the raw tensors. */
    void checkRows(Cases.Opened c, ExpertWeights w, RawDecoder raw) {
        int inter = w.intermediate();
        for (int e : new int[]{0, w.numExperts() - 1}) {
            for (int r : new int[]{0, inter - 1, inter, 2 * inter - 1}) {
                Projection p = r < inter ? Projection.GATE : Projection.UP;
                double[] expect = new double[w.hidden()];
                for (int col = 0; col < expect.length; col++) {
                    expect[col] = raw.element(c, e, p, r % inter, col);
                }
                assertClose(Dequant.row(w.w13(), e, r), expect, c.name() + " w13 e" + e + " r" + r);
            }
            double[] expect = new double[inter];
            for (int col = 0; col < inter; col++) {
                expect[col] = raw.element(c, e, Projection.DOWN, 7, col);
            }
            assertClose(Dequant.row(w.w2(), e, 7), expect, c.name() + " w2 e" + e);
        }
    }

    interface RawDecoder {
        double element(Cases.Opened c, int e, Projection p, int r, int col);
    }

    static float bf16(float f) {
        return io.moe4j.format.Bf16.round(f);
    }


    static CtQuantArgs args(int bits, String type, Integer group, String strategy, boolean dynamic) {
        return CtQuantArgs.of(bits, type, true, group, strategy, dynamic);
    }
}

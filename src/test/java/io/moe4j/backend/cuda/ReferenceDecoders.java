package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import java.lang.foreign.MemorySegment;

/**
 * Plain float64 decoding of the packed formats straight from their definitions, written independently of the
 * kernels' bit tricks: the reference the GPU results are compared with.
 */
final class ReferenceDecoders {
    private ReferenceDecoders() {
    }

    private static final double[] E2M1 = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

    /** OCP E2M1: sign bit 3, then the magnitude table above. */
    static double e2m1(int code) {
        double magnitude = E2M1[code & 7];
        return (code & 8) != 0 ? -magnitude : magnitude;
    }

    /** OCP E8M0: 2^(s - 127), 255 is NaN. */
    static double e8m0(int bits) {
        return bits == 255 ? Double.NaN : Math.scalb(1.0, bits - 127);
    }

    /** OCP E4M3FN: bias 7, subnormals at exponent 0, S.1111.111 is NaN, no infinities. */
    static double e4m3(int bits) {
        int sign = (bits >> 7) & 1;
        int exponent = (bits >> 3) & 15;
        int mantissa = bits & 7;
        if (exponent == 15 && mantissa == 7) {
            return Double.NaN;
        }
        double magnitude = exponent == 0 ? Math.scalb(mantissa / 8.0, -6) : Math.scalb(1 + mantissa / 8.0, exponent - 7);
        return sign == 1 ? -magnitude : magnitude;
    }

    static double bf16(int bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** W[e, n, k] of the stack, decoded. */
    static double weight(RowStack w, int e, int n, int k) {
        long row = (long) e * w.rows() + n;
        int cols = w.cols();
        return switch (w.format()) {
            case MXFP4 -> e2m1(nibble(w.codes(), row * (cols / 2), k))
                    * e8m0(Byte.toUnsignedInt(w.scales().get(JAVA_BYTE, row * (cols / 32) + k / 32)));
            case INT4 -> (nibble(w.codes(), row * (cols / 2), k) - 8)
                    * bf16(w.scales().get(JAVA_SHORT_UNALIGNED, 2 * (row * (cols / w.group()) + k / w.group())));
            case BF16 -> bf16(w.codes().get(JAVA_SHORT_UNALIGNED, 2 * (row * cols + k)));
            case FP8_E4M3 -> e4m3(Byte.toUnsignedInt(w.codes().get(JAVA_BYTE, row * cols + k)))
                    * w.scales().get(JAVA_FLOAT_UNALIGNED, 4 * row);
        };
    }

    private static int nibble(MemorySegment codes, long rowStart, int k) {
        int b = Byte.toUnsignedInt(codes.get(JAVA_BYTE, rowStart + k / 2));
        return (k & 1) == 0 ? b & 15 : b >>> 4;
    }

    /** out[p, n] = sum_k W[experts[p], n, k] * x[rows[p], k], in float64. */
    static double[] groupedGemv(RowStack w, float[] x, int[] experts, int[] rows) {
        int n = w.rows();
        int k = w.cols();
        double[] out = new double[experts.length * n];
        for (int p = 0; p < experts.length; p++) {
            for (int i = 0; i < n; i++) {
                double sum = 0;
                for (int j = 0; j < k; j++) {
                    sum += weight(w, experts[p], i, j) * x[rows[p] * k + j];
                }
                out[p * n + i] = sum;
            }
        }
        return out;
    }

    /** ||got - want|| / ||want||. */
    static double relativeL2(float[] got, double[] want) {
        double diff = 0;
        double norm = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            diff += d * d;
            norm += want[i] * want[i];
        }
        return Math.sqrt(diff / norm);
    }
}

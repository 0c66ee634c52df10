package io.moe4j.backend.cpu;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * A batch of tokens rounded to int8 for {@link Int8PanelDot}, as llama.cpp's Q8_0 blocks: each segment of the packed
 * column order ({@link ColumnPlan}) cut into blocks of {@value #BLOCK} columns (the last one of a segment may be
 * shorter), each block with one float scale d = max|x|/127 and codes q = round(x/d) in [-127, 127]. Blocks never
 * straddle a segment, so a weight's block scale and an input's block scale meet once per block.
 *
 * <p>The codes are laid out for the kernels' 16-bit lanes: a lane word splits into two 16-bit halves, each holding
 * {@code slots/2} consecutive columns, so the int {@code (q[c + slots/2] << 16) | (q[c] & 0xFFFF)} broadcast to every
 * lane pairs column c with the low half and column c + slots/2 with the high half. {@link #codes} holds those ints,
 * slots/2 a lane word.
 *
 * <p>No subnormal float reaches a kernel: each token is first scaled by a power of two 2^K that brings its largest
 * magnitude into [1, 2) (exact; undone in double at the store, {@link #post}), and a block whose largest magnitude is
 * below 2^-60 of the token's is stored as zeros with d = 0 (its share of any output is below 2^-60 of the largest
 * input's, far under the rounding of the other blocks). A token holding NaN or infinity gets post = NaN: its outputs
 * are NaN.
 */
final class Q8Inputs extends Inputs {
    private static final VectorSpecies<Float> F = VectorShapes.F;
    private static final VectorSpecies<Integer> I = VectorShapes.I;
    /** Columns a block. */
    static final int BLOCK = 32;
    /** Relative size under which a block is stored as zeros. */
    private static final double TINY = 0x1p-60;

    /** Per token: the paired codes, slots/2 ints a lane word. */
    final int[][] codes;
    /** Per token and block: d·2^K, normal or 0. */
    final float[][] scales;
    /** Per token and block: Σ q, for the codes' offset and zero points. */
    final int[][] sums;
    /** Per token: 2^-K, or NaN for a token that holds NaN or infinity. */
    final double[] post;
    /**
     * For {@link Int8PanelDot#fp4Bytes} (one FP4 token where {@link Int8PanelDot#FP4_BYTES}, else null): 32 shorts a
     * lane word, the even columns c, c+2, c+4, c+6 four times, then the odd ones, as the kernel's 16-bit lanes pair
     * them.
     */
    final short[][] byteLanes;

    private Q8Inputs(Inputs in, int[][] codes, float[][] scales, int[][] sums, double[] post, short[][] byteLanes) {
        super(in.n, in.padded, in.x);
        this.byteLanes = byteLanes;
        this.codes = codes;
        this.scales = scales;
        this.sums = sums;
        this.post = post;
    }

    /** Lane words a block of segment words: {@value #BLOCK} columns. */
    static int blockWords(LaneCodec codec) {
        return BLOCK / codec.slots();
    }

    /** Blocks over the plan's segments, each segment cut at every {@code blockWords} words. */
    static int blocks(ColumnPlan plan, int blockWords) {
        int b = 0;
        int[] seg = plan.segmentWords();
        for (int g = 0; g + 1 < seg.length; g++) {
            b += Math.ceilDiv(seg[g + 1] - seg[g], blockWords);
        }
        return b;
    }

    static Q8Inputs of(PanelMatrix m, int expert, Inputs in) {
        LaneCodec codec = m.codec();
        int slots = codec.slots();
        int half = slots / 2;
        ColumnPlan plan = m.plan(expert);
        int[] seg = plan.segmentWords();
        int blockWords = blockWords(codec);
        int blocks = blocks(plan, blockWords);
        int padded = in.padded;
        int[][] codes = new int[in.n][padded / 2];
        float[][] scales = new float[in.n][blocks];
        int[][] sums = new int[in.n][blocks];
        double[] post = new double[in.n];
        short[][] byteLanes = codec == LaneCodec.FP4 && in.n == 1 && Int8PanelDot.FP4_BYTES ? new short[1][] : null;
        int[] q = new int[padded];
        for (int t = 0; t < in.n; t++) {
            int xb = t * padded;
            double amax = FusedInputs.absMax(in.x, xb, padded);
            // Full blocks of a token of ordinary range take the vector path (factors up/d are finite floats).
            boolean fast = amax >= 0x1p-100 && amax <= 0x1p100;
            java.util.Arrays.fill(q, 0);
            if (!Double.isFinite(amax)) {
                post[t] = Double.NaN;
            } else if (amax == 0) {
                post[t] = 1;
            } else {
                int k = -Math.getExponent(amax);
                double up = Math.scalb(1.0, k);
                post[t] = Math.scalb(1.0, -k);
                // Doubles throughout: x·2^K and the block maxima stay far from double's subnormals.
                int b = 0;
                for (int g = 0; g + 1 < seg.length; g++) {
                    for (int w = seg[g]; w < seg[g + 1]; w += blockWords, b++) {
                        int c0 = w * slots;
                        int c1 = Math.min(seg[g + 1], w + blockWords) * slots;
                        if (fast && c1 - c0 == BLOCK) {
                            quantizeBlock(in.x, xb, c0, up, q, scales[t], sums[t], b);
                            continue;
                        }
                        double bmax = 0;
                        for (int c = c0; c < c1; c++) {
                            bmax = Math.max(bmax, Math.abs(in.x[xb + c] * up));
                        }
                        if (bmax < TINY) {
                            continue;
                        }
                        float d = (float) (bmax / 127);
                        int sum = 0;
                        for (int c = c0; c < c1; c++) {
                            int v = (int) Math.clamp(Math.round(in.x[xb + c] * up / d), -127, 127);
                            q[c] = v;
                            sum += v;
                        }
                        scales[t][b] = d;
                        sums[t][b] = sum;
                    }
                }
            }
            int[] out = codes[t];
            for (int w = 0, o = 0; w < padded / slots; w++) {
                for (int j = 0; j < half; j++) {
                    int c = w * slots + j;
                    out[o++] = q[c + half] << 16 | (q[c] & 0xFFFF);
                }
            }
            if (byteLanes != null) {
                byteLanes[t] = byteLanes(q, padded / slots);
            }
        }
        return new Q8Inputs(in, codes, scales, sums, post, byteLanes);
    }

    private static short[] byteLanes(int[] q, int words) {
        short[] out = new short[32 * words];
        for (int w = 0, o = 0; w < words; w++) {
            for (int parity = 0; parity < 2; parity++) {
                for (int row = 0; row < 4; row++) {
                    for (int i = 0; i < 4; i++) {
                        out[o++] = (short) q[8 * w + 2 * i + parity];
                    }
                }
            }
        }
        return out;
    }

    /**
     * One full block at packed column c0 of the token at xb, in float vectors: d = max|x|·2^K/127, q = x·2^K/d
     * rounded half away from zero. The scalar path of partial blocks rounds half up ({@code Math.round}): the two differ
     * only for a negative value exactly halfway between two integers.
     */
    private static void quantizeBlock(float[] x, int xb, int c0, double up, int[] q, float[] scales, int[] sums, int b) {
        FloatVector m = FloatVector.zero(F);
        for (int c = c0; c < c0 + BLOCK; c += F.length()) {
            m = m.max(FloatVector.fromArray(F, x, xb + c).abs());
        }
        double bmax = m.reduceLanes(VectorOperators.MAX) * up;
        if (bmax < TINY) {
            return;
        }
        float d = (float) (bmax / 127);
        float f = (float) (up / d);
        IntVector sum = IntVector.zero(I);
        for (int c = c0; c < c0 + BLOCK; c += F.length()) {
            FloatVector v = FloatVector.fromArray(F, x, xb + c).mul(f);
            IntVector mag = ((IntVector) v.abs().add(0.5f).convert(VectorOperators.F2I, 0)).min(127);
            IntVector qi = mag.lanewise(VectorOperators.NEG, v.lt(0f).cast(I));
            qi.intoArray(q, c);
            sum = sum.add(qi);
        }
        scales[b] = d;
        sums[b] = sum.reduceLanes(VectorOperators.ADD);
    }
}

package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT_UNALIGNED;
import static java.lang.foreign.ValueLayout.JAVA_SHORT_UNALIGNED;

import io.moe4j.activation.Activation;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.Routing;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.SplittableRandom;

/**
 * Random expert weights in every packed layout {@link ExpertMatrix} describes, with codes drawn over all finite
 * values and scales in realistic ranges, and random routings: inputs for comparing a backend with the reference.
 */
final class RandomWeights {
    private RandomWeights() {
    }

    /**
     * How a stack is quantized: code type, block scales (type, blockRows x blockCols; blockCols 0 = one per row),
     * zero points, shard scales (rows per shard, 0 = none; -1 = one per projection of w13) and act-order groups.
     */
    record Layout(String name, WeightFormat format, CodeType code, ScaleType scale, int blockRows, int blockCols,
            boolean zeros, int shardRows, boolean actOrder) {

        static Layout dense(WeightFormat f, CodeType c) {
            return new Layout(f.name(), f, c, null, 0, 0, false, 0, false);
        }

        static Layout scaled(String name, WeightFormat f, CodeType c, ScaleType s, int blockRows, int blockCols) {
            return new Layout(name, f, c, s, blockRows, blockCols, false, 0, false);
        }

        Layout withZeros() {
            return new Layout(name + "+zp", format, code, scale, blockRows, blockCols, true, shardRows, actOrder);
        }

        Layout withShards() {
            return new Layout(name + "+shards", format, code, scale, blockRows, blockCols, zeros, -1, actOrder);
        }

        Layout withActOrder() {
            return new Layout(name + "+actorder", format, code, scale, blockRows, blockCols, zeros, shardRows, true);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    static ExpertMatrix matrix(Arena arena, SplittableRandom rnd, Layout l, int experts, int rows, int cols, int shardRows) {
        long rowBytes = l.code().rowBytes(cols);
        MemorySegment codes = arena.allocate(rowBytes * experts * rows, 16);
        fillCodes(rnd, l.code(), codes);
        BlockScales scales = null;
        MemorySegment zeros = null;
        if (l.scale() != null) {
            int blockCols = l.blockCols() == 0 ? cols : l.blockCols();
            int blockRows = l.blockRows();
            int rowBlocks = Math.ceilDiv(rows, blockRows);
            int colBlocks = Math.ceilDiv(cols, blockCols);
            long n = (long) experts * rowBlocks * colBlocks;
            MemorySegment data = arena.allocate(n * l.scale().bytes(), 16);
            for (long i = 0; i < n; i++) {
                switch (l.scale()) {
                    case E8M0 -> data.set(JAVA_BYTE, i, (byte) rnd.nextInt(118, 127));
                    // E4M3 codes 0x28..0x48 are 0.25 .. 4
                    case E4M3 -> data.set(JAVA_BYTE, i, (byte) rnd.nextInt(0x28, 0x49));
                    case F32 -> data.set(JAVA_FLOAT_UNALIGNED, 4 * i, (float) rnd.nextDouble(0.002, 0.03));
                }
            }
            scales = new BlockScales(l.scale(), data, blockRows, blockCols, rowBlocks, colBlocks);
            if (l.zeros()) {
                zeros = arena.allocate(n);
                int range = l.code() == CodeType.INT4 ? 8 : 20;
                for (long i = 0; i < n; i++) {
                    zeros.set(JAVA_BYTE, i, (byte) rnd.nextInt(-range, range));
                }
            }
        }
        float[] shards = null;
        if (l.shardRows() != 0) {
            shards = new float[experts * (rows / shardRows)];
            for (int i = 0; i < shards.length; i++) {
                shards[i] = (float) rnd.nextDouble(0.5, 2);
            }
        }
        int[][] groupIndex = null;
        if (l.actOrder()) {
            groupIndex = new int[experts][];
            for (int e = 0; e < experts; e++) {
                int[] perm = permutation(rnd, cols);
                groupIndex[e] = new int[cols];
                for (int pos = 0; pos < cols; pos++) {
                    groupIndex[e][perm[pos]] = pos / l.blockCols();
                }
            }
        }
        return new ExpertMatrix(experts, rows, cols, l.code(), codes, scales, zeros, shards,
                shards == null ? 0 : shardRows, groupIndex);
    }

    static int[] permutation(SplittableRandom rnd, int n) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    private static void fillCodes(SplittableRandom rnd, CodeType code, MemorySegment s) {
        long n = s.byteSize();
        switch (code) {
            case F32 -> {
                for (long i = 0; i < n; i += 4) {
                    s.set(JAVA_FLOAT_UNALIGNED, i, (float) (rnd.nextGaussian() * 0.05));
                }
            }
            case BF16 -> {
                for (long i = 0; i < n; i += 2) {
                    s.set(JAVA_SHORT_UNALIGNED, i, RandomExperts.bf16(rnd.nextGaussian() * 0.05));
                }
            }
            case F16 -> {
                for (long i = 0; i < n; i += 2) {
                    s.set(JAVA_SHORT_UNALIGNED, i, Float.floatToFloat16((float) (rnd.nextGaussian() * 0.05)));
                }
            }
            case FP8_E4M3 -> {
                for (long i = 0; i < n; i++) {
                    int b;
                    do {
                        b = rnd.nextInt(256);
                    } while ((b & 0x7F) == 0x7F); // NaN
                    s.set(JAVA_BYTE, i, (byte) b);
                }
            }
            case FP8_E5M2 -> {
                for (long i = 0; i < n; i++) {
                    int b;
                    do {
                        b = rnd.nextInt(256);
                    } while ((b & 0x7C) == 0x7C); // infinities and NaN
                    s.set(JAVA_BYTE, i, (byte) b);
                }
            }
            default -> {
                for (long i = 0; i < n; i++) {
                    s.set(JAVA_BYTE, i, (byte) rnd.nextInt(256));
                }
            }
        }
    }

    /**
     * A layer: w13 and w2 in layout {@code l}, the activation and gate layout given, random biases when asked,
     * activations quantized by a13 and a2.
     */
    static ExpertWeights layer(Arena arena, SplittableRandom rnd, Layout l, int experts, int hidden, int inter,
            Activation act, GateLayout gate, boolean biases, ActivationQuant a13, ActivationQuant a2) {
        int rows13 = gate == GateLayout.NONE ? inter : 2 * inter;
        ExpertMatrix w13 = matrix(arena, rnd, l, experts, rows13, hidden, inter);
        ExpertMatrix w2 = matrix(arena, rnd, l, experts, hidden, inter, hidden);
        float[] b13 = biases ? gaussian(rnd, experts * rows13, 0.1) : null;
        float[] b2 = biases ? gaussian(rnd, experts * hidden, 0.1) : null;
        QuantScheme scheme = new QuantScheme("random " + l.name(), l.format(),
                a13.format() == ActivationFormat.NONE ? a2.format() : a13.format(), l.actOrder());
        return new ExpertWeights(scheme, experts, hidden, inter, w13, w2, b13, b2, gate, act, Activation.OAI_LIMIT,
                a13, a2, null);
    }

    static float[] gaussian(SplittableRandom rnd, int n, double sd) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (float) (rnd.nextGaussian() * sd);
        }
        return v;
    }

    /** Each token picks topK distinct experts of {@code experts} with softmax-like positive weights. */
    static Routing routing(SplittableRandom rnd, int tokens, int topK, int experts, boolean weightOnInput) {
        int[] ids = new int[tokens * topK];
        float[] weights = new float[tokens * topK];
        for (int t = 0; t < tokens; t++) {
            int[] perm = permutation(rnd, experts);
            int[] chosen = java.util.Arrays.copyOf(perm, topK);
            java.util.Arrays.sort(chosen);
            double sum = 0;
            double[] raw = new double[topK];
            for (int j = 0; j < topK; j++) {
                raw[j] = Math.exp(rnd.nextGaussian());
                sum += raw[j];
            }
            for (int j = 0; j < topK; j++) {
                ids[t * topK + j] = chosen[j];
                weights[t * topK + j] = (float) (raw[j] / sum);
            }
        }
        return new Routing(tokens, topK, ids, weights, weightOnInput);
    }
}

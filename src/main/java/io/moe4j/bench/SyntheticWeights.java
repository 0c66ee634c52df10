package io.moe4j.bench;

import io.moe4j.format.Bf16;
import io.moe4j.format.ElementFormat;
import io.moe4j.format.Fp16;
import io.moe4j.activation.Activation;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.ScaleType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;
import java.util.function.LongConsumer;

/**
 * Random experts in any {@link SyntheticScheme}, built straight into off-heap {@link ExpertWeights} (no files):
 * uniformly random codes (never a NaN or infinity code) and scales chosen so that each weight has about
 * 1/√cols root-mean-square, which keeps every layer's activations of order one. Deterministic for a seed.
 */
public final class SyntheticWeights {
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /**
     * The layer's sizes and expert kind.
     *
     * @param biases whether w13 and w2 have biases (gpt-oss)
     */
    public record Shape(int experts, int hidden, int intermediate, GateLayout gateLayout, Activation activation,
                        boolean biases) {
        public int w13Rows() {
            return gateLayout == GateLayout.NONE ? intermediate : 2 * intermediate;
        }
    }

    private SyntheticWeights() {
    }

    /**
     * Builds the experts; codes and scales live in {@code arena}. {@code progress} is told the bytes generated.
     */
    public static ExpertWeights generate(SyntheticScheme scheme, Shape shape, long seed, Arena arena,
                                         LongConsumer progress) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int e = shape.experts();
        ExpertMatrix w13 = matrix(scheme, e, shape.w13Rows(), shape.hidden(),
                shape.gateLayout() == GateLayout.NONE ? shape.w13Rows() : shape.intermediate(),
                scheme.w13ActOrderParts(), rnd.split(), arena, progress);
        ExpertMatrix w2 = matrix(scheme, e, shape.hidden(), shape.intermediate(), shape.hidden(), 1, rnd.split(),
                arena, progress);
        float[] b13 = shape.biases() ? gaussian(rnd, e * shape.w13Rows(), 0.1) : null;
        float[] b2 = shape.biases() ? gaussian(rnd, e * shape.hidden(), 0.1) : null;
        ActivationQuant a = scheme.activations(e);
        return new ExpertWeights(scheme.scheme(e), e, shape.hidden(), shape.intermediate(), w13, w2, b13, b2,
                shape.gateLayout(), shape.activation(), Activation.OAI_LIMIT, a, a, null);
    }

    /**
     * A stack of {@code experts} matrices rows × cols; {@code shardRows} rows share one shard scale; act-order
     * schemes give each of {@code actOrderParts} equal row parts its own column → group map.
     */
    static ExpertMatrix matrix(SyntheticScheme s, int experts, int rows, int cols, int shardRows, int actOrderParts,
                               SplittableRandom rnd, Arena arena, LongConsumer progress) {
        CodeType type = s.codes();
        // Weight scale that gives the matrix rows of unit gain: rms(weight) · √cols ≈ 1.
        double target = 1.0 / (codeRms(type) * Math.sqrt(cols));
        MemorySegment codes = codes(type, (long) experts * rows * type.rowBytes(cols), rnd, arena, progress);
        if (type == CodeType.BF16 || type == CodeType.F16 || type == CodeType.F32) {
            fillFloats(type, codes, rnd, 1.0 / Math.sqrt(cols));
            return ExpertMatrix.dense(experts, rows, cols, type, codes);
        }
        float[] shard = null;
        double blockTarget = target;
        if (s.shards()) {
            shard = new float[experts * (rows / shardRows)];
            for (int i = 0; i < shard.length; i++) {
                // NVFP4's shard scale is 1/global scale, with block scales near 2^4; the others carry it all.
                shard[i] = (float) (s.scaleType() == ScaleType.E4M3 ? target / 16 : target) * (0.75f + 0.5f * (float) rnd.nextDouble());
            }
            blockTarget = s.scaleType() == ScaleType.E4M3 ? 16 : 1;
        }
        BlockScales scales = null;
        MemorySegment zeros = null;
        int[][] groupIndex = null;
        if (s.scaleType() != null) {
            int blockCols = s.blockCols(cols);
            int rowBlocks = Math.ceilDiv(rows, s.blockRows());
            int colBlocks = Math.ceilDiv(cols, blockCols);
            long n = (long) experts * rowBlocks * colBlocks;
            MemorySegment data = arena.allocate(n * s.scaleType().bytes(), 8);
            for (long i = 0; i < n; i++) {
                double v = blockTarget * (0.75 + 0.5 * rnd.nextDouble());
                switch (s.scaleType()) {
                    case E8M0 -> data.set(ValueLayout.JAVA_BYTE, i,
                            (byte) (127 + Math.round(Math.log(v) / Math.log(2)) + rnd.nextInt(-1, 2)));
                    case E4M3 -> data.set(ValueLayout.JAVA_BYTE, i, (byte) ElementFormat.E4M3FN.encode((float) v));
                    case F32 -> data.set(F32, 4 * i, (float) v);
                }
            }
            scales = new BlockScales(s.scaleType(), data, s.blockRows(), blockCols, rowBlocks, colBlocks);
            if (s.zeroPoints()) {
                zeros = arena.allocate(n, 8);
                for (long i = 0; i < n; i++) {
                    zeros.set(ValueLayout.JAVA_BYTE, i, (byte) rnd.nextInt(-2, 3));
                }
            }
            if (s.actOrder()) {
                groupIndex = new int[experts * actOrderParts][];
                for (int i = 0; i < groupIndex.length; i++) {
                    groupIndex[i] = shuffledGroups(cols, blockCols, rnd);
                }
            }
        }
        return new ExpertMatrix(experts, rows, cols, type, codes, scales, zeros, shard,
                shard == null ? 0 : shardRows, groupIndex);
    }

    /** Each column's group, blockCols columns a group, in a random order (what act-order checkpoints look like). */
    private static int[] shuffledGroups(int cols, int blockCols, SplittableRandom rnd) {
        int[] order = new int[cols];
        for (int i = 0; i < cols; i++) {
            order[i] = i;
        }
        for (int i = cols - 1; i > 0; i--) {
            int j = rnd.nextInt(i + 1);
            int t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        int[] g = new int[cols];
        for (int i = 0; i < cols; i++) {
            g[order[i]] = i / blockCols;
        }
        return g;
    }

    /** Uniformly random code bytes; FP8 NaN and infinity codes moved to the largest finite code. */
    private static MemorySegment codes(CodeType type, long bytes, SplittableRandom rnd, Arena arena,
                                       LongConsumer progress) {
        MemorySegment seg = arena.allocate(bytes, 64);
        long chunk = 1L << 24;
        for (long start = 0; start < bytes; start += chunk) {
            long end = Math.min(bytes, start + chunk);
            long i = start;
            for (; i + 8 <= end; i += 8) {
                seg.set(I64, i, sanitize(type, rnd.nextLong()));
            }
            for (; i < end; i++) {
                seg.set(ValueLayout.JAVA_BYTE, i, (byte) sanitize(type, rnd.nextInt(256)));
            }
            progress.accept(end - start);
        }
        return seg;
    }

    /** Eight code bytes with E4M3's S.1111.111 and E5M2's S.11111.xx (NaN, infinity) replaced by finite codes. */
    private static long sanitize(CodeType type, long v) {
        return switch (type) {
            case FP8_E4M3 -> {
                // Bytes whose low 7 bits are all ones lose their lowest bit: 0x7F → 0x7E (448).
                long low7 = v & 0x7F7F7F7F7F7F7F7FL;
                long full = (low7 + 0x0101010101010101L) & 0x8080808080808080L;
                yield v & ~(full >>> 7);
            }
            case FP8_E5M2 -> {
                // Exponent all ones (bits 2..6 of each byte) → clear bit 2.
                long exp = v & 0x7C7C7C7C7C7C7C7CL;
                long allOnes = (exp + 0x0404040404040404L) & 0x8080808080808080L;
                yield v & ~(allOnes >>> 5);
            }
            default -> v;
        };
    }

    /** Gaussian values of the given deviation, rounded to the float code type, over the whole segment. */
    private static void fillFloats(CodeType type, MemorySegment seg, SplittableRandom rnd, double std) {
        long n = seg.byteSize() / (type.bits() / 8);
        for (long i = 0; i < n; i++) {
            float v = (float) (std * gaussian(rnd));
            switch (type) {
                case BF16 -> seg.set(I16, 2 * i, Bf16.fromFloat(v));
                case F16 -> seg.set(I16, 2 * i, Fp16.fromFloat(v));
                default -> seg.set(F32, 4 * i, v);
            }
        }
    }

    /** Root-mean-square value of a uniformly random finite code. */
    static double codeRms(CodeType type) {
        return switch (type) {
            case FP4_E2M1 -> tableRms(ElementFormat.E2M1);
            case FP6_E3M2 -> tableRms(ElementFormat.E3M2);
            case FP6_E2M3 -> tableRms(ElementFormat.E2M3);
            case FP8_E4M3 -> tableRms(ElementFormat.E4M3FN);
            case FP8_E5M2 -> tableRms(ElementFormat.E5M2);
            case INT4 -> Math.sqrt(((16.0 * 16 - 1) / 12) + 0.25);
            case INT8 -> Math.sqrt(((256.0 * 256 - 1) / 12) + 0.25);
            default -> 1.0;
        };
    }

    private static double tableRms(ElementFormat f) {
        double sum = 0;
        int n = 0;
        for (float v : f.decodeTable()) {
            if (Float.isFinite(v)) {
                sum += (double) v * v;
                n++;
            }
        }
        return Math.sqrt(sum / n);
    }

    static float[] gaussian(SplittableRandom rnd, int n, double std) {
        float[] out = new float[n];
        for (int i = 0; i < n; i++) {
            out[i] = (float) (std * gaussian(rnd));
        }
        return out;
    }

    private static double gaussian(SplittableRandom rnd) {
        double u1 = rnd.nextDouble();
        double u2 = rnd.nextDouble();
        return Math.sqrt(-2 * Math.log(1 - u1)) * Math.cos(2 * Math.PI * u2);
    }

    /** Random inputs [tokens, hidden] of unit scale. */
    public static float[] inputs(int tokens, int hidden, long seed) {
        return gaussian(new SplittableRandom(seed), tokens * hidden, 1.0);
    }
}

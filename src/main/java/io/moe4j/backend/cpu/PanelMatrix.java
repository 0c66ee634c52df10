package io.moe4j.backend.cpu;

import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ScaleType;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * An {@link ExpertMatrix} repacked once, at prepare time, into the layout the CPU kernels stream: rows in panels of
 * {@value #LANES} (one row per vector lane), columns in {@link ColumnPlan} segments of lane words
 * ({@link LaneCodec}), and every per-row quantity of a panel next to each other. About as compact as the checkpoint:
 * the codes keep their width (FP6 takes 5 codes a word, 6.4 bits a code) plus padding of segments and of the last
 * panel; block scales and zero points keep their type.
 *
 * <pre>
 *   lane word (e, p, w, lane)   int at ((e·panels + p)·wordsPerPanel + w)·4·LANES + 4·lane of {@code words}
 *   block scale (e, p, g, lane) at ((e·panels + p)·groups + g)·LANES + lane, in units of the scale type's bytes
 *   zero point  (e, p, g, lane) signed byte at the same index in {@code zeros}
 *   shard scale (e, row)        shard[e·panels·LANES + row]
 * </pre>
 *
 * @param plans  the column plan of each expert (one shared instance unless act-order permutes per expert)
 * @param groups segments per plan (the block-scale groups; 1 without per-column groups)
 * @param scales block scales, or null; {@code scaleType} says how they are stored
 * @param zeros  zero points, or null
 * @param shard  per-row multipliers, or null
 * @param plainE8m0 whether every scale is an E8M0 byte other than 0 and 255, so that the kernels may read it as
 *               the float whose exponent field it is (no subnormal 2^-127, no NaN)
 */
record PanelMatrix(ExpertMatrix source, LaneCodec codec, int panels, int wordsPerPanel, ColumnPlan[] plans,
                   int groups, MemorySegment words, ScaleType scaleType, MemorySegment scales, MemorySegment zeros,
                   float[] shard, boolean plainE8m0) {
    /** Rows a panel: the lanes of the kernels' vectors, 8 at 256 bits and 16 at 512 ({@link VectorWidth}). */
    static final int LANES = VectorWidth.LANES;

    /** This matrix with {@link #plainE8m0} found by reading its scales. */
    PanelMatrix withScalesChecked() {
        boolean plain = scaleType == ScaleType.E8M0;
        for (long i = 0, n = plain ? scales.byteSize() : 0; i < n && plain; i++) {
            int b = scales.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
            plain = b != 0 && b != 255;
        }
        return new PanelMatrix(source, codec, panels, wordsPerPanel, plans, groups, words, scaleType, scales, zeros,
                shard, plain);
    }

    int rows() {
        return source.rows();
    }

    int cols() {
        return source.cols();
    }

    ColumnPlan plan(int expert) {
        return plans[expert];
    }

    /** Byte offset of lane word 0 of word w of panel p of expert e. */
    long wordOffset(int expert, int panel, int word) {
        return (((long) expert * panels + panel) * wordsPerPanel + word) * (4L * LANES);
    }

    /** Index (in scale units) of lane 0 of the scales of segment g of panel p of expert e. */
    long scaleIndex(int expert, int panel, int group) {
        return (((long) expert * panels + panel) * groups + group) * LANES;
    }

    /** Bytes the packed weights of one expert take: codes, scales, zero points, shard scales. */
    long bytesPerExpert() {
        long b = (long) panels * wordsPerPanel * 4L * LANES;
        if (scales != null) {
            b += scales.byteSize() / source.experts();
        }
        if (zeros != null) {
            b += zeros.byteSize() / source.experts();
        }
        return b;
    }
}

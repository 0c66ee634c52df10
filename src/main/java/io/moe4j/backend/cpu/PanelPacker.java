package io.moe4j.backend.cpu;

import io.moe4j.backend.Workers;
import io.moe4j.memory.UnzeroedMemory;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ScaleType;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/** Repacks an {@link ExpertMatrix} into a {@link PanelMatrix}, experts and runs of panels in parallel. */
final class PanelPacker {
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final int LANES = PanelMatrix.LANES;

    private PanelPacker() {
    }

    static PanelMatrix pack(ExpertMatrix m, Arena arena, Workers pool) {
        return pack(m, arena, pool, true);
    }

    /**
     * {@link #pack}; {@code wordCopies} false packs every code through {@link LaneCodec#pack} even where the
     * checkpoint's bytes are already the lane words (the tests compare both).
     */
    static PanelMatrix pack(ExpertMatrix m, Arena arena, Workers pool, boolean wordCopies) {
        if (m.groupParts() != 1) {
            // A panel reads one gathered input: each part with its own act-order map must be an expert of its own.
            throw new IllegalArgumentException("an act-order matrix with " + m.groupParts() + " column orders per "
                    + "expert packs through its partsAsExperts() view");
        }
        LaneCodec codec = LaneCodec.of(m.codes());
        int experts = m.experts();
        int panels = Math.ceilDiv(m.rows(), LANES);
        ColumnPlan[] plans = new ColumnPlan[experts];
        if (m.groupIndex() != null && m.blockScales() != null && m.blockScales().colBlocks() > 1) {
            for (int e = 0; e < experts; e++) {
                plans[e] = ColumnPlan.of(m, e, codec.slots());
            }
        } else {
            java.util.Arrays.fill(plans, ColumnPlan.of(m, 0, codec.slots()));
        }
        int wordsPerPanel = 0;
        for (ColumnPlan p : plans) {
            wordsPerPanel = Math.max(wordsPerPanel, p.words());
        }
        int groups = plans[0].segments();
        BlockScales bs = m.blockScales();
        ScaleType scaleType = bs == null ? null : bs.type();
        long lanesTotal = (long) experts * panels * LANES;
        // Every byte of the three is written below (each panel's words whole, each lane's scales and zero points).
        MemorySegment words = UnzeroedMemory.allocate(arena, lanesTotal * wordsPerPanel * 4L, 64);
        MemorySegment scales = bs == null ? null
                : UnzeroedMemory.allocate(arena, lanesTotal * groups * bs.type().bytes(), 64);
        MemorySegment zeros = bs == null || m.zeroPoints() == null ? null
                : UnzeroedMemory.allocate(arena, lanesTotal * groups, 64);
        float[] shard = m.shardScales() == null ? null : new float[Math.toIntExact(lanesTotal)];
        PanelMatrix pm = new PanelMatrix(m, codec, panels, wordsPerPanel, plans, groups, words, scaleType, scales,
                zeros, shard, false);
        // Experts cut into runs of panels so that a matrix of one expert (a dense linear) packs on every worker too.
        int runs = Math.min(panels, Math.max(1, Math.ceilDiv(pool.threads() * 4, experts)));
        int perRun = Math.ceilDiv(panels, runs);
        int runsPerExpert = Math.ceilDiv(panels, perRun);
        pool.run(experts * runsPerExpert, (task, worker) -> {
            int e = task / runsPerExpert;
            int from = (task % runsPerExpert) * perRun;
            int to = Math.min(panels, from + perRun);
            if (!wordCopies || !packWordCopies(pm, e, from, to)) {
                packPanels(pm, e, from, to);
            }
        });
        return pm.withScalesChecked();
    }

    /** Panels [from, to) of expert e. */
    private static void packPanels(PanelMatrix pm, int e, int from, int to) {
        ExpertMatrix m = pm.source();
        LaneCodec codec = pm.codec();
        ColumnPlan plan = pm.plan(e);
        int slots = codec.slots();
        int rows = m.rows();
        RawCodes reader = new RawCodes(m);
        int[] raw = new int[m.cols()];
        int[][] packedCols = new int[LANES][plan.paddedColumns() + slots];
        int[] panelWords = new int[pm.wordsPerPanel() * LANES];
        for (int p = from; p < to; p++) {
            for (int lane = 0; lane < LANES; lane++) {
                int r = p * LANES + lane;
                int[] dst = packedCols[lane];
                if (r >= rows) {
                    java.util.Arrays.fill(dst, 0);
                    continue;
                }
                reader.read(e, r, raw);
                int[] source = plan.source();
                for (int i = 0; i < source.length; i++) {
                    int c = source[i];
                    int code = c < 0 ? 0 : raw[c];
                    if (c >= 0 && codec.special(code)) {
                        throw new IllegalArgumentException(String.format(
                                "%s weight code 0x%X at expert %d, row %d, column %d is NaN or infinite; the cpu "
                                        + "backend does not run weights holding such codes", m.codes(), code, e, r, c));
                    }
                    // BF16 and F32 subnormals packed as signed zeros: the kernels compute with normal floats only.
                    dst[i] = codec.normalCode(code);
                }
            }
            for (int w = 0; w < plan.words(); w++) {
                for (int lane = 0; lane < LANES; lane++) {
                    panelWords[w * LANES + lane] = codec.pack(packedCols[lane], w * slots);
                }
            }
            MemorySegment.copy(panelWords, 0, pm.words(), INT, pm.wordOffset(e, p, 0), panelWords.length);
            packPanelScales(pm, e, p);
        }
    }

    /**
     * Panels [from, to) of expert e when a row's stored bytes, read as little-endian 32-bit words, are its lane words
     * but for a fixed bit flip: FP4, FP8, INT4, INT8 and BF16 codes in column order (no act-order permutation, no
     * padding), which {@link LaneCodec#pack} lays out slot j at bits (32 / slots)·j, the order the checkpoint
     * stores them in. Such a panel is a transpose of its rows' words, with no work a code (which had been most of a
     * MoE layer's loading time). False for the other layouts (nothing written), and on FP8 words holding NaN or
     * infinite codes (the caller then packs the range again through {@link #packPanels}, which refuses them by
     * position).
     */
    private static boolean packWordCopies(PanelMatrix pm, int e, int from, int to) {
        ExpertMatrix m = pm.source();
        LaneCodec codec = pm.codec();
        ColumnPlan plan = pm.plan(e);
        int flip = switch (codec) {
            case FP4, FP8_E4M3, FP8_E5M2, BF16 -> 0;
            // offset-binary: code + 8 (+ 128) is the two's-complement nibble (byte) with its top bit flipped
            case INT4 -> 0x88888888;
            case INT8 -> 0x80808080;
            default -> -1;
        };
        int words = plan.words();
        if (flip == -1 || !plan.identity() || (long) words * 4 != m.rowBytes()) {
            return false;
        }
        int rows = m.rows();
        int[] rowWords = new int[words];
        int[] panelWords = new int[pm.wordsPerPanel() * LANES];
        int padding = codec.pack(new int[codec.slots()], 0); // rows past the matrix: every code 0
        for (int p = from; p < to; p++) {
            for (int lane = 0; lane < LANES; lane++) {
                int r = p * LANES + lane;
                if (r >= rows) {
                    for (int w = 0; w < words; w++) {
                        panelWords[w * LANES + lane] = padding;
                    }
                    continue;
                }
                MemorySegment.copy(m.data(), INT, m.rowOffset(e, r), rowWords, 0, words);
                switch (codec) {
                    case FP8_E4M3, FP8_E5M2 -> {
                        // NaN or infinity in any byte: E4M3 0x7F / 0xFF, E5M2 exponent all ones (0x7C mask); adding
                        // the step to the masked byte carries into its bit 7 only for those
                        int mask = codec == LaneCodec.FP8_E4M3 ? 0x7F7F7F7F : 0x7C7C7C7C;
                        int step = codec == LaneCodec.FP8_E4M3 ? 0x01010101 : 0x04040404;
                        for (int w = 0; w < words; w++) {
                            if ((((rowWords[w] & mask) + step) & 0x80808080) != 0) {
                                return false;
                            }
                        }
                    }
                    case BF16 -> {
                        for (int w = 0; w < words; w++) {
                            rowWords[w] = normalBf16Pair(rowWords[w]);
                        }
                    }
                    default -> {
                    }
                }
                for (int w = 0; w < words; w++) {
                    panelWords[w * LANES + lane] = rowWords[w] ^ flip;
                }
            }
            MemorySegment.copy(panelWords, 0, pm.words(), INT, pm.wordOffset(e, p, 0), panelWords.length);
            packPanelScales(pm, e, p);
        }
        return true;
    }

    /** Two BF16 codes with each subnormal replaced by zero of its sign, as {@link LaneCodec#normalCode} does. */
    private static int normalBf16Pair(int word) {
        if ((word & 0x7F800000) != 0 && (word & 0x7F80) != 0) {
            return word; // both exponents nonzero: no subnormal, no zero (the common case)
        }
        int lo = word & 0xFFFF;
        int hi = word >>> 16;
        lo = (lo & 0x7F80) == 0 ? lo & 0x8000 : lo;
        hi = (hi & 0x7F80) == 0 ? hi & 0x8000 : hi;
        return hi << 16 | lo;
    }

    /**
     * Block scales and zero points of each segment for the panel's rows; shard scales per row. A panel's scales are
     * [segment][lane] and a row's are [segment] in the checkpoint: gathered into one array a panel and copied in one
     * go, instead of a copy call a scale (MXFP4's 32-column blocks make 90 scales a row of gpt-oss).
     */
    private static void packPanelScales(PanelMatrix pm, int e, int p) {
        ExpertMatrix m = pm.source();
        BlockScales bs = m.blockScales();
        int rows = m.rows();
        if (pm.shard() != null) {
            for (int lane = 0; lane < LANES; lane++) {
                int r = p * LANES + lane;
                pm.shard()[(e * pm.panels() + p) * LANES + lane] = r < rows ? m.shardScale(e, r) : 1f;
            }
        }
        if (bs == null) {
            return;
        }
        int unit = bs.type().bytes();
        int groups = pm.groups();
        byte[] scales = new byte[groups * LANES * unit];
        byte[] zeros = pm.zeros() == null ? null : new byte[groups * LANES];
        // A row block's scales (and zero points) for groups 0, 1, ... lie side by side in the checkpoint's layout
        // (BlockScales.offset): one copy a row block, shared by the panel's rows in it, instead of a segment read a
        // byte (skipping those reads outright took 0.5-3 s off a 7-12 s load of qwen3's 8-layer FP8 cut).
        byte[] blockScales = new byte[groups * unit];
        byte[] blockZeros = zeros == null ? null : new byte[groups];
        int copied = -1;
        for (int lane = 0; lane < LANES; lane++) {
            int r = p * LANES + lane;
            // Padding rows: any finite scale does (row block 0's), zero point 0; their outputs are never stored.
            int rowBlock = r < rows ? r / bs.blockRows() : 0;
            if (rowBlock != copied) {
                long from = bs.offset(e, rowBlock, 0);
                MemorySegment.copy(bs.data(), ValueLayout.JAVA_BYTE, from, blockScales, 0, blockScales.length);
                if (blockZeros != null) {
                    MemorySegment.copy(m.zeroPoints(), ValueLayout.JAVA_BYTE, from / unit, blockZeros, 0, groups);
                }
                copied = rowBlock;
            }
            for (int g = 0; g < groups; g++) {
                System.arraycopy(blockScales, g * unit, scales, (g * LANES + lane) * unit, unit);
                if (zeros != null && r < rows) {
                    zeros[g * LANES + lane] = blockZeros[g];
                }
            }
        }
        long dst = pm.scaleIndex(e, p, 0);
        MemorySegment.copy(scales, 0, pm.scales(), ValueLayout.JAVA_BYTE, dst * unit, scales.length);
        if (zeros != null) {
            MemorySegment.copy(zeros, 0, pm.zeros(), ValueLayout.JAVA_BYTE, dst, zeros.length);
        }
    }
}

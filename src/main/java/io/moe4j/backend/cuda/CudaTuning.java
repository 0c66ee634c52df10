package io.moe4j.backend.cuda;

import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How {@link CudaBackend} picks and shapes its kernels. The defaults come from the H100/H200 measurements in
 * docs/cuda.md; the system properties exist to measure other choices, and tests force each path with explicit values.
 *
 * @param tileMinPairsPerExpert MXFP4 matrices go through a prefill tile GEMM when the routed pairs per expert used
 *                              average at least this (the GEMV reads an expert's weights once per pair, a tile GEMM
 *                              once per block of pairs); {@code Integer.MAX_VALUE} never
 * @param tileWarps             mma.sync tile GEMM: warps per block
 * @param tileRowTilesPerWarp   mma.sync tile GEMM: 16-row weight tiles each warp multiplies (B fragment reuse)
 * @param tileTokens            mma.sync tile GEMM: routed pairs per block (a multiple of 8)
 * @param wgmma                 the wgmma tile GEMM's shape, used instead of mma.sync on sm_90a devices; null never
 * @param unitsRows             CUDA-core GEMM: rows per warp
 * @param unitsWarps            CUDA-core GEMM: warps per block
 * @param gemvPiecePairs        MXFP4 GEMV: blocks take up to four pairs of one expert (one decode of its weights)
 *                              when the pieces average at least this many pairs; infinity never
 * @param mappedTransfers       graph-replayed (small) batches read their staged inputs and write their output
 *                              through mapped pinned memory from kernels, instead of copy-engine transfers
 * @param overlappedLaunches    the kernels of a graph-replayed batch are recorded as overlapped launches (programmatic
 *                              dependent launch, sm_90+): each may start while the one before it finishes, the
 *                              second GEMM streaming its first weights meanwhile; see moe4j_common.cuh
 * @param unitsGemv             one token's CUDA-core products (a decode step's quantized linears, routed pairs one to a
 *                              batch) take moe_gemv_units, the same sums shaped for memory; false: moe_gemm_units
 */
public record CudaTuning(int tileMinPairsPerExpert, int tileWarps, int tileRowTilesPerWarp, int tileTokens,
        WgmmaTile wgmma, int unitsRows, int unitsWarps, double gemvPiecePairs, boolean mappedTransfers,
        boolean overlappedLaunches, boolean unitsGemv) {

    /**
     * Shape of gemm_mxfp4_wgmma.cu's blocks.
     *
     * @param groups       warpgroups per block (WG_GROUPS)
     * @param tokens       routed pairs per block (WG_N: 16 to 256, a power of two); calls whose experts average
     *                     fewer take less, down to {@code fewestTokens}
     * @param rowGroups    groups of 64 weight rows each warpgroup multiplies by the block's x tile (WG_M)
     * @param stages       shared-memory stages (WG_STAGES); block pairs are requested stages - 2 ahead
     * @param fewestTokens the fewest pairs a block is shaped for. A block's MMAs cost the same for any count up to its
     *                     width, so a narrow one suits small groups (a batch-64 decode step routes ~8 pairs to each
     *                     expert), while an expert with more pairs than the width takes several blocks, each
     *                     decoding the expert's weights again
     */
    public record WgmmaTile(int groups, int tokens, int rowGroups, int stages, int fewestTokens) {
        private static final List<Integer> WIDTHS = List.of(16, 32, 64, 128, 256);

        public WgmmaTile {
            if (groups < 1 || groups > 2 || !WIDTHS.contains(tokens) || rowGroups < 1 || rowGroups > 2
                    || stages < 3 || stages > 8 || !WIDTHS.contains(fewestTokens) || fewestTokens > tokens) {
                throw new IllegalArgumentException("wgmma tile out of range: " + this);
            }
        }

        /**
         * Pairs a block takes when {@code pairs} pairs fall on {@code experts} experts: the tile's width, halved down
         * to {@link #fewestTokens} while it exceeds their average, or below 64 pairs twice their average. A block's
         * MMAs cost its width whatever its count, and an expert with more pairs than the width is decoded once for
         * each block it takes: at 8 and 16 pairs an expert on average (batch-64 and -128 decode steps of
         * gpt-oss-20b) blocks of 16 and 32 pairs measured fastest (docs/cuda.md), where nearly every expert's group
         * fits one block; above 64 pairs the plain average was measured on prompts.
         */
        int blockPairs(long pairs, long experts) {
            int n = tokens;
            while (n > fewestTokens && (long) n * experts > (n > 64 ? 1 : 2) * pairs) {
                n /= 2;
            }
            return n;
        }

        int warps() {
            return 4 * groups;
        }

        /** 16-row weight tiles a block covers. */
        int rowTiles() {
            return warps() * rowGroups;
        }

        /**
         * Dynamic shared memory of a block of {@code pairs} pairs: per stage the x rows (128 bytes a pair) and each
         * lane's code and scale words (20 bytes per row group), rounded up to 1 KiB, plus 1 KiB to align the first
         * stage (the 128-byte swizzle repeats every 1 KiB). Mirrors STAGE_BYTES in the kernel.
         */
        int sharedBytes(int pairs) {
            int stage = Math.ceilDiv(pairs * 128 + rowGroups * warps() * 32 * 20, 1024) * 1024;
            return stages * stage + 1024;
        }

        List<String> defines(int pairs) {
            return List.of("-DWG_GROUPS=" + groups, "-DWG_N=" + pairs, "-DWG_M=" + rowGroups, "-DWG_STAGES=" + stages);
        }

        String name() {
            return "g" + groups + "n" + tokens + (rowGroups != 1 ? "m" + rowGroups : "") + (stages != 4 ? "s" + stages : "")
                    + (fewestTokens != Math.min(DEFAULT_FEWEST_TOKENS, tokens) ? "f" + fewestTokens : "");
        }
    }

    /** The fewest pairs a wgmma block is shaped for unless the tile spec says ("f64" for the floor before it). */
    static final int DEFAULT_FEWEST_TOKENS = 16;

    private static final Pattern MMA_SYNC = Pattern.compile("w(\\d+)t(\\d+)n(\\d+)");
    private static final Pattern WGMMA = Pattern.compile("g(\\d+)n(\\d+)(?:m(\\d+))?(?:s(\\d+))?(?:f(\\d+))?");
    private static final Pattern UNITS = Pattern.compile("(\\d+)x(\\d+)");

    public CudaTuning {
        if (tileMinPairsPerExpert < 1 || tileWarps < 1 || tileWarps > 16 || tileRowTilesPerWarp < 1
                || tileRowTilesPerWarp > 4 || tileTokens < 8 || tileTokens > 128 || tileTokens % 8 != 0
                || unitsRows < 1 || unitsRows > 8 || unitsWarps < 1 || unitsWarps > 32 || !(gemvPiecePairs >= 1)) {
            throw new IllegalArgumentException("tuning out of range: " + this);
        }
    }

    public static CudaTuning defaults() {
        return new CudaTuning(4, 4, 2, 64, new WgmmaTile(2, 128, 1, 4, DEFAULT_FEWEST_TOKENS), 2, 8, 2.0, true, true,
                true);
    }

    /**
     * The defaults with overrides from {@code -Dmoe4j.cuda.tileMinPairs=N}, {@code -Dmoe4j.cuda.tile=...} (see
     * {@link #withTile}) and {@code -Dmoe4j.cuda.units=RxW} (CUDA-core GEMM rows per warp x warps per block), e.g.
     * {@code 2x8}, {@code -Dmoe4j.cuda.gemvPiecePairs=F} (see {@link #gemvPiecePairs}; "Infinity" turns pieces off)
     * {@code -Dmoe4j.cuda.transfers=copy|mapped} (see {@link #mappedTransfers}),
     * {@code -Dmoe4j.cuda.overlap=true|false} (see {@link #overlappedLaunches}) and
     * {@code -Dmoe4j.cuda.unitsGemv=true|false} (see {@link #unitsGemv}).
     */
    public static CudaTuning fromSystemProperties() {
        CudaTuning t = defaults();
        String min = System.getProperty("moe4j.cuda.tileMinPairs");
        if (min != null && !min.isBlank()) {
            t = t.withTileMinPairsPerExpert(Integer.parseInt(min.trim()));
        }
        String tile = System.getProperty("moe4j.cuda.tile");
        if (tile != null && !tile.isBlank()) {
            t = t.withTile(tile.trim());
        }
        String units = System.getProperty("moe4j.cuda.units");
        if (units != null && !units.isBlank()) {
            t = t.withUnits(units.trim());
        }
        String pieces = System.getProperty("moe4j.cuda.gemvPiecePairs");
        if (pieces != null && !pieces.isBlank()) {
            t = t.withGemvPiecePairs(Double.parseDouble(pieces.trim()));
        }
        Boolean mapped = choice("moe4j.cuda.transfers", "mapped", "copy");
        if (mapped != null) {
            t = t.withMappedTransfers(mapped);
        }
        Boolean overlap = choice("moe4j.cuda.overlap", "true", "false");
        if (overlap != null) {
            t = t.withOverlappedLaunches(overlap);
        }
        Boolean gemv = choice("moe4j.cuda.unitsGemv", "true", "false");
        if (gemv != null) {
            t = t.withUnitsGemv(gemv);
        }
        return t;
    }

    /** A two-way system property: true for {@code yes}, false for {@code no}, null when unset; else an error. */
    private static Boolean choice(String property, String yes, String no) {
        String value = System.getProperty(property);
        if (value == null || value.isBlank()) {
            return null;
        }
        if (value.trim().equals(yes) || value.trim().equals(no)) {
            return value.trim().equals(yes);
        }
        throw new IllegalArgumentException("-D" + property + "=" + value + ": expected " + yes + " or " + no);
    }

    public CudaTuning withTileMinPairsPerExpert(int pairs) {
        return new CudaTuning(pairs, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, unitsRows, unitsWarps,
                gemvPiecePairs, mappedTransfers, overlappedLaunches, unitsGemv);
    }

    /**
     * The prefill tile kernel: "w8t2n64" the mma.sync kernel on every device (8 warps, 2 row tiles per warp, 64
     * pairs per block); "g2n128" the wgmma kernel where the device has it (2 warpgroups, 128 pairs per block), with
     * optional "m2" (row groups per warpgroup), "s5" (stages) and "f64" (the fewest pairs a block,
     * {@link #DEFAULT_FEWEST_TOKENS} or the width when unset) suffixes.
     */
    public CudaTuning withTile(String spec) {
        Matcher m = MMA_SYNC.matcher(spec);
        if (m.matches()) {
            return new CudaTuning(tileMinPairsPerExpert, Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                    Integer.parseInt(m.group(3)), null, unitsRows, unitsWarps, gemvPiecePairs, mappedTransfers,
                    overlappedLaunches, unitsGemv);
        }
        m = WGMMA.matcher(spec);
        if (m.matches()) {
            int tokens = Integer.parseInt(m.group(2));
            WgmmaTile w = new WgmmaTile(Integer.parseInt(m.group(1)), tokens,
                    m.group(3) == null ? 1 : Integer.parseInt(m.group(3)), m.group(4) == null ? 4 : Integer.parseInt(m.group(4)),
                    m.group(5) == null ? Math.min(DEFAULT_FEWEST_TOKENS, tokens) : Integer.parseInt(m.group(5)));
            return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, w, unitsRows,
                    unitsWarps, gemvPiecePairs, mappedTransfers, overlappedLaunches, unitsGemv);
        }
        throw new IllegalArgumentException("tile variant " + spec + " is neither wNtNnN (mma.sync) nor gNnN[mN][sN][fN] (wgmma)");
    }

    public CudaTuning withGemvPiecePairs(double pairs) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, unitsRows,
                unitsWarps, pairs, mappedTransfers, overlappedLaunches, unitsGemv);
    }

    /** "2x8": 2 rows per warp, 8 warps per block. */
    public CudaTuning withUnits(String spec) {
        Matcher m = UNITS.matcher(spec);
        if (!m.matches()) {
            throw new IllegalArgumentException("CUDA-core GEMM shape " + spec + " is not RxW (rows per warp x warps)");
        }
        return withUnits(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
    }

    public CudaTuning withUnits(int rows, int warps) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, rows, warps,
                gemvPiecePairs, mappedTransfers, overlappedLaunches, unitsGemv);
    }

    public CudaTuning withMappedTransfers(boolean mapped) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, unitsRows,
                unitsWarps, gemvPiecePairs, mapped, overlappedLaunches, unitsGemv);
    }

    public CudaTuning withOverlappedLaunches(boolean overlapped) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, unitsRows,
                unitsWarps, gemvPiecePairs, mappedTransfers, overlapped, unitsGemv);
    }

    public CudaTuning withUnitsGemv(boolean gemv) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, wgmma, unitsRows,
                unitsWarps, gemvPiecePairs, mappedTransfers, overlappedLaunches, gemv);
    }

    /** The prefill kernel's spec as {@link #withTile} reads it: the wgmma one where set. */
    String tileName() {
        return wgmma != null ? wgmma.name() : "w" + tileWarps + "t" + tileRowTilesPerWarp + "n" + tileTokens;
    }

    List<String> tileDefines() {
        return List.of("-DTILE_WARPS=" + tileWarps, "-DTILE_TPW=" + tileRowTilesPerWarp, "-DTILE_BN=" + tileTokens);
    }

    /** Row tiles one mma.sync tile-GEMM block covers. */
    int tileRowTilesPerBlock() {
        return tileWarps * tileRowTilesPerWarp;
    }
}

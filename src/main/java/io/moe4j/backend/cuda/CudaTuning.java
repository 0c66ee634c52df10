package io.moe4j.backend.cuda;

import java.util.List;

/**
 * How {@link CudaBackend} picks and shapes its kernels. The defaults come from the H100/H200 measurements in
 * NOTES.md; the system properties exist to measure other choices, and tests force each path with explicit values.
 *
 * @param tileMinPairsPerExpert MXFP4 matrices go through the prefill tile GEMM when the routed pairs per expert
 *                              used average at least this (the GEMV reads an expert's weights once per pair, the
 *                              tile GEMM once per {@code tileTokens} pairs); {@code Integer.MAX_VALUE} never
 * @param tileWarps             tile GEMM: warps per block
 * @param tileRowTilesPerWarp   tile GEMM: 16-row weight tiles each warp multiplies (B fragment reuse)
 * @param tileTokens            tile GEMM: routed pairs per block (a multiple of 8)
 * @param unitsRows             CUDA-core GEMM: rows per warp
 * @param unitsWarps            CUDA-core GEMM: warps per block
 */
public record CudaTuning(int tileMinPairsPerExpert, int tileWarps, int tileRowTilesPerWarp, int tileTokens,
        int unitsRows, int unitsWarps) {

    public CudaTuning {
        if (tileMinPairsPerExpert < 1 || tileWarps < 1 || tileWarps > 16 || tileRowTilesPerWarp < 1
                || tileRowTilesPerWarp > 4 || tileTokens < 8 || tileTokens > 128 || tileTokens % 8 != 0
                || unitsRows < 1 || unitsRows > 8 || unitsWarps < 1 || unitsWarps > 32) {
            throw new IllegalArgumentException("tuning out of range: " + this);
        }
    }

    public static CudaTuning defaults() {
        return new CudaTuning(4, 4, 2, 64, 2, 8);
    }

    /**
     * The defaults with overrides from {@code -Dmoe4j.cuda.tileMinPairs=N}, {@code -Dmoe4j.cuda.tile=wNtNnN}
     * (warps, row tiles per warp, tokens), e.g. {@code w8t2n64}, and {@code -Dmoe4j.cuda.units=RxW} (CUDA-core GEMM
     * rows per warp x warps per block), e.g. {@code 2x8}.
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
        return t;
    }

    public CudaTuning withTileMinPairsPerExpert(int pairs) {
        return new CudaTuning(pairs, tileWarps, tileRowTilesPerWarp, tileTokens, unitsRows, unitsWarps);
    }

    /** "w8t2n64": 8 warps, 2 row tiles per warp, 64 pairs per block. */
    public CudaTuning withTile(String spec) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("w(\\d+)t(\\d+)n(\\d+)").matcher(spec);
        if (!m.matches()) {
            throw new IllegalArgumentException("tile variant " + spec + " is not wNtNnN");
        }
        return new CudaTuning(tileMinPairsPerExpert, Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)),
                Integer.parseInt(m.group(3)), unitsRows, unitsWarps);
    }

    /** "2x8": 2 rows per warp, 8 warps per block. */
    public CudaTuning withUnits(String spec) {
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("(\\d+)x(\\d+)").matcher(spec);
        if (!m.matches()) {
            throw new IllegalArgumentException("CUDA-core GEMM shape " + spec + " is not RxW (rows per warp x warps)");
        }
        return withUnits(Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2)));
    }

    public CudaTuning withUnits(int rows, int warps) {
        return new CudaTuning(tileMinPairsPerExpert, tileWarps, tileRowTilesPerWarp, tileTokens, rows, warps);
    }

    String tileName() {
        return "w" + tileWarps + "t" + tileRowTilesPerWarp + "n" + tileTokens;
    }

    List<String> tileDefines() {
        return List.of("-DTILE_WARPS=" + tileWarps, "-DTILE_TPW=" + tileRowTilesPerWarp, "-DTILE_BN=" + tileTokens);
    }

    /** Row tiles one tile-GEMM block covers. */
    int tileRowTilesPerBlock() {
        return tileWarps * tileRowTilesPerWarp;
    }
}

package io.moe4j.backend.cuda;

import java.util.List;

/**
 * How the MXFP4 tensor-core GEMV ({@link Mxfp4Gemv}) is compiled and launched. The defaults were chosen by
 * CudaGemvBench (test tree) on an H100; other values exist to measure, and to test that the kernel computes the same
 * function at any tiling.
 *
 * @param kSplit        warps splitting one 16-row tile's K range; 0 chooses per call from the amount of work
 *                      ({@link #autoKSplit})
 * @param tilesPerBlock 16-row tiles per block; 0 makes blocks of 8 warps
 * @param depth         stages of each warp's cp.async ring (block pairs in flight + 1)
 */
public record GemvTuning(int kSplit, int tilesPerBlock, int depth) {

    public GemvTuning {
        check(kSplit, 0, 16, "K split");
        check(tilesPerBlock, 0, 8, "tiles per block");
        check(depth, 2, 16, "depth");
        if (kSplit * tilesPerBlock > 32) {
            throw new IllegalArgumentException("at most 32 warps a block: K split " + kSplit + " x tiles " + tilesPerBlock);
        }
    }

    /** Measured on an H100 with the gpt-oss-20b shapes (CudaGemvBench): the K split chosen per call, 8-warp blocks
     * and a 4-stage ring. */
    public static GemvTuning defaults() {
        return new GemvTuning(0, 0, 4);
    }

    /** The defaults with the ring depth from {@code -Dmoe4j.cuda.gemvDepth=N} where given (to measure). */
    public static GemvTuning fromSystemProperties() {
        GemvTuning t = defaults();
        String depth = System.getProperty("moe4j.cuda.gemvDepth");
        if (depth != null && !depth.isBlank()) {
            t = new GemvTuning(t.kSplit, t.tilesPerBlock, Integer.parseInt(depth.trim()));
        }
        return t;
    }

    /** Warps per SM the automatic K split aims for: about where the H100 measurements stopped improving. */
    static final int TARGET_WARPS_PER_SM = 20;

    /**
     * The smallest K split in 1, 2, 4, 8 that gives {@code rowTiles * pairs * split} warps enough to keep every SM
     * at {@link #TARGET_WARPS_PER_SM}: few routed rows (decode) need their K range shared among warps to have
     * enough loads in flight, many rows do not and then skip the cross-warp reduction.
     */
    static int autoKSplit(long rowTiles, long pairs, int multiprocessors) {
        long wanted = (long) TARGET_WARPS_PER_SM * multiprocessors;
        int split = 1;
        while (split < 8 && rowTiles * pairs * split < wanted) {
            split *= 2;
        }
        return split;
    }

    /** This tuning with the K split fixed (and tiles per block filling 8 warps where unset). */
    GemvTuning resolve(int split) {
        int tiles = tilesPerBlock > 0 ? tilesPerBlock : Math.max(1, 8 / split);
        return new GemvTuning(split, tiles, depth);
    }

    List<String> mmaDefines() {
        return List.of("-DMOE4J_KSPLIT=" + kSplit, "-DMOE4J_TILES=" + tilesPerBlock, "-DMOE4J_DEPTH=" + depth);
    }

    /** "mma k4 t2 d3" or "mma kauto tauto d4", for benchmark tables. */
    public String describe() {
        return "mma k" + (kSplit == 0 ? "auto" : kSplit) + " t" + (tilesPerBlock == 0 ? "auto" : tilesPerBlock)
                + " d" + depth;
    }

    private static void check(int v, int lo, int hi, String what) {
        if (v < lo || v > hi) {
            throw new IllegalArgumentException(what + " must be in [" + lo + ", " + hi + "], got " + v);
        }
    }
}

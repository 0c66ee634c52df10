package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * decode_mxfp4.cu: the whole experts stage of a small batch on two MXFP4 matrices in one persistent launch (one
 * block per SM, grid barriers between gate_up, the activation, down and the combine). This class decides whether
 * a call can take it and with which grid, and launches it; the plan arrays and buffers are {@link CudaExperts}'s.
 */
final class PersistentDecode {
    /** DEC_MAX_PAIRS: the kernel keeps the pairs' experts in shared memory. */
    static final int MAX_PAIRS = 32;
    /** DEC_SEGMENTS: partial sums kept per row tile. */
    static final int SEGMENTS = 4;
    private static final String FILE = "decode_mxfp4.cu";
    private static final String NAME = "moe_decode_mxfp4";

    /**
     * One pair count's launch: {@code blocks} of {@code threads}, the warps that take a range of each GEMV phase
     * (fewer than all where ranges would cut a tile into more than {@link #SEGMENTS} parts), dynamic shared memory,
     * and the float counts of the partial-sum buffers.
     */
    record Shape(int blocks, int threads, int warps1, int warps2, int shared, long part1Floats, long part2Floats) {
    }

    private final KernelCache kernels;
    private final CudaTuning.PersistentDecode tuning;
    private final Mxfp4Matrix w13;
    private final Mxfp4Matrix w2;
    private final int multiprocessors;
    /** shape(pairs) by pair count, computed once (empty: the kernel cannot take that many). */
    private final AtomicReferenceArray<Optional<Shape>> shapes =
            new AtomicReferenceArray<>(MAX_PAIRS + 1);

    private final java.util.concurrent.atomic.AtomicBoolean printed = new java.util.concurrent.atomic.AtomicBoolean();

    PersistentDecode(KernelCache kernels, CudaTuning.PersistentDecode tuning, Mxfp4Matrix w13, Mxfp4Matrix w2,
            int multiprocessors) {
        this.kernels = kernels;
        this.tuning = tuning;
        this.w13 = w13;
        this.w2 = w2;
        this.multiprocessors = multiprocessors;
    }

    private KernelCache.Kernel kernel() {
        List<String> defines = new ArrayList<>(tuning.defines());
        if (w13.experts().specialScales() || w2.experts().specialScales()) {
            defines.add("-DMOE4J_EXACT_E8M0=1");
        }
        String extra = System.getProperty("moe4j.cuda.decodeDefines"); // EXPERIMENT
        if (extra != null) {
            defines.addAll(List.of(extra.split(",")));
        }
        KernelCache.Kernel k = kernels.get(FILE, NAME, defines);
        if (extra != null && printed.compareAndSet(false, true)) {
            System.err.println("DECODE " + defines + " " + k.function().resources());
        }
        return k;
    }

    /** The launch for {@code pairs} routed pairs, or null where the kernel cannot take them on this device. */
    Shape shape(int pairs) {
        if (pairs < 1 || pairs > MAX_PAIRS) {
            return null;
        }
        Optional<Shape> known = shapes.get(pairs);
        if (known == null) {
            known = Optional.ofNullable(computeShape(pairs));
            shapes.set(pairs, known);
        }
        return known.orElse(null);
    }

    private Shape computeShape(int pairs) {
        int blocks = multiprocessors;
        int total = blocks * tuning.warps();
        long stages1 = (long) pairs * w13.rowTiles() * w13.blockPairs();
        long stages2 = (long) pairs * w2.rowTiles() * w2.blockPairs();
        int warps1 = warpsFor(stages1, w13.blockPairs(), total);
        int warps2 = warpsFor(stages2, w2.blockPairs(), total);
        int span1 = maxPairSpan(stages1, (long) w13.rowTiles() * w13.blockPairs(), warps1, blocks);
        int span2 = maxPairSpan(stages2, (long) w2.rowTiles() * w2.blockPairs(), warps2, blocks);
        // Each warp's ring (depth x 640 bytes), then x areas (256 bytes a block pair) and a 256-byte zero area.
        long shared = 640L * tuning.warps() * tuning.depth()
                + 256L * Math.max((long) span1 * w13.blockPairs(), (long) span2 * w2.blockPairs()) + 256;
        KernelCache.Kernel k = kernel();
        int threads = 32 * tuning.warps();
        if (shared > k.sharedLimit() || k.function().maxActiveBlocksPerSm(threads, shared) < 1) {
            return null;
        }
        return new Shape(blocks, threads, warps1, warps2, (int) shared,
                partFloats(pairs, w13.rowTiles()), partFloats(pairs, w2.rowTiles()));
    }

    /** SEGMENTS x 16 floats of partial sums a row tile, then an int per tile (the segments written). */
    private static long partFloats(int pairs, int rowTiles) {
        return (long) pairs * rowTiles * (SEGMENTS * 16 + 1);
    }

    /** As many warps as there are, as long as each range holds at least BP / (SEGMENTS - 1) stages. */
    static int warpsFor(long stages, int blockPairs, int total) {
        long minRange = Math.ceilDiv(blockPairs, SEGMENTS - 1);
        return (int) Math.max(1, Math.min(total, stages / minRange));
    }

    static long rangeStart(long stages, int warps, long w) {
        return Math.min(w, warps) * stages / warps;
    }

    /** The most pairs whose stages one block's warps cover (each needs its x area in shared memory). */
    private int maxPairSpan(long stages, long perPair, int warps, int blocks) {
        int span = 0;
        for (int b = 0; b < blocks; b++) {
            long first = rangeStart(stages, warps, (long) b * tuning.warps());
            long end = rangeStart(stages, warps, (long) (b + 1) * tuning.warps());
            if (end > first) {
                span = Math.max(span, (int) ((end - 1) / perPair - first / perPair + 1));
            }
        }
        return span;
    }

    /** The buffers and plan addresses of one launch; equal values launch identical kernels (graph replay). */
    record Launch(Shape shape, DeviceBuffer x, int hidden, int intermediate, int rows13, int pairs, long pairToken,
            long pairExpert, DeviceBuffer bias13, int gateMode, int activation, float limit, float alpha,
            long tokenPair, long tokenWeight, int topK, int tokens, DeviceBuffer bias2, boolean weightOnInput,
            DeviceBuffer part1, DeviceBuffer act, DeviceBuffer part2, DeviceBuffer barrier, long out) {
    }

    void enqueue(Launch l, CudaStream stream) {
        Shape s = l.shape();
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(w13.experts().codes()).pointer(w13.experts().scales())
                    .i32(w13.rowTiles()).i32(w13.blockPairs()).pointer(w2.experts().codes())
                    .pointer(w2.experts().scales()).i32(w2.rowTiles()).i32(w2.blockPairs()).pointer(l.x())
                    .i32(l.hidden()).i32(l.intermediate()).i32(l.rows13()).i32(l.pairs()).i32(s.warps1())
                    .i32(s.warps2()).pointer(l.pairToken()).pointer(l.pairExpert())
                    .pointer(CudaExperts.pointerOf(l.bias13())).i32(l.gateMode()).i32(l.activation()).f32(l.limit())
                    .f32(l.alpha()).pointer(l.tokenPair()).pointer(l.tokenWeight()).i32(l.topK()).i32(l.tokens())
                    .pointer(CudaExperts.pointerOf(l.bias2())).i32(l.weightOnInput() ? 1 : 0).pointer(l.part1())
                    .pointer(l.act()).pointer(l.part2()).pointer(l.barrier()).pointer(l.out());
            if (Boolean.getBoolean("moe4j.cuda.decodePlain")) { // EXPERIMENT
                kernel().function().launch(s.blocks(), 1, 1, s.threads(), 1, 1, s.shared(), stream, args);
            } else {
                kernel().function().launchCooperative(s.blocks(), s.threads(), s.shared(), stream, args);
            }
        }
    }

    /** For logs: the shape and the kernel's resources. */
    String describe() {
        return "persistent decode " + tuning.name() + " (" + kernel().function().resources() + ")";
    }
}

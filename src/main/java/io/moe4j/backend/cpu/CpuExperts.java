package io.moe4j.backend.cpu;

import io.moe4j.backend.Experts;
import io.moe4j.backend.TokenGroups;
import io.moe4j.backend.Workers;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;

/**
 * The experts of one layer on the CPU. A forward call groups the routed tokens by expert, then runs five parallel
 * loops on the pool, each over independent pieces:
 * <ol>
 *   <li>inputs: each expert's tokens, quantize-dequantized by a13 and laid out for its packed w13;</li>
 *   <li>GEMM1 over (expert, block of w13 rows), plus w13 bias;</li>
 *   <li>activation and a2 per (expert, token), laid out for w2;</li>
 *   <li>GEMM2 over (expert, block of w2 rows), plus w2 bias;</li>
 *   <li>combine: each block of output columns sums its tokens' expert outputs with the router weights.</li>
 * </ol>
 * Large batches run in waves of (expert, token) pairs so the intermediate buffers stay bounded. Per-call state lives
 * in the call; the pool runs one loop at a time, so concurrent calls are safe.
 *
 * <p>An act-order w13 whose gate and up halves order their columns differently ({@link ExpertMatrix#groupParts()}
 * = 2) is packed with each half as an expert of its own ({@link ExpertMatrix#partsAsExperts()}): each half gathers
 * its inputs in its own order and GEMM1 runs per half, writing the rows where the whole w13 would.
 */
final class CpuExperts implements Experts {
    /** Intermediate floats a wave may hold (64 MiB). */
    private static final long WAVE_FLOATS = 16L << 20;
    /**
     * A wave's gate/up, activation and output buffers up to this many floats (256 KB) are kept for the calling
     * thread's next call: one token's keep theirs (8 x 1536 gate/up floats for Qwen3, 4 x 5760 for gpt-oss), a
     * batch's and a prompt's larger ones are allocated as needed, so a model of 61 layers keeps at most 47 MB a
     * calling thread.
     */
    private static final int KEPT_FLOATS = 1 << 16;
    /**
     * Expert outputs (pairs × hidden) up to which a wave's combine runs on the calling thread. Qwen3's one-token
     * layer (8 × 2048) on the Zen 5 VM: 12-14 µs as a plain loop over two workers, 8-9 on the calling thread alone,
     * 2.6-2.9 vectorized there ({@link CpuKernels#addScaled}); 64 K values take a few µs on one core, about what a
     * fork and join of the pool costs.
     */
    private static final long INLINE_COMBINE_FLOATS = 1 << 16;
    /**
     * GEMM tasks a worker gets per loop ({@link Wave#rowBlock}), about: more balance the loop's end (a worker that
     * finishes early cannot help with a task under way), fewer cost less per task. 32, not 8: with the linears' 16
     * ({@link CpuMatrices}) the 16-core Xeon's gpt-oss-20b decode went from 69.8-78.2 to 64.8-69.6 ms a token (four
     * pairs of runs; docs/model-bench.md). {@code -Dmoe4j.cpu.tasksPerThread} (1-256) sets it, to measure.
     */
    private static final int TASKS_PER_THREAD = Math.clamp(Integer.getInteger("moe4j.cpu.tasksPerThread", 32), 1,
            256);

    private final ExpertWeights w;
    private final CpuKernels kernels;
    private final Workers pool;
    /** The pool this layer started for itself (closed with it), or null when it runs on a model's shared workers. */
    private final WorkerPool ownPool;
    private final Arena arena;
    private final PanelMatrix w13;
    /** Parts of each expert's w13 packed as experts of their own (1 unless gate and up have their own act-order). */
    private final int parts13;
    private final PanelMatrix w2;
    private final Scratch[] scratch;
    /**
     * Per calling thread: the last wave's h1, activation and output buffers (index 0, 1, 2), reused by its next call.
     * Every value a wave reads from them it has written first, so they are not cleared. Measured on the Zen 5 VM (one
     * token, two threads, a phase-timed build switching the output array between fresh and kept, alternated): fresh
     * arrays, about 100 KB a call, left half the runs in a slow mode (0.43-0.46 ms a call for Qwen3's like-for-like
     * W8A16 and W4A16 shapes, 1.09 for gpt-oss's, the small phases 3-10x their usual time) and the rest at 0.31-0.35
     * and 0.88; kept, 0.27-0.38 and 0.70-0.72 with no slow mode in eight runs.
     */
    private final ThreadLocal<float[][]> kept = ThreadLocal.withInitial(() -> new float[3][0]);
    private final boolean sharedA13;

    /** Experts on {@code threads} workers of their own, closed with them. */
    CpuExperts(ExpertWeights w, CpuKernels kernels, int threads) {
        this(w, kernels, threads, null);
    }

    /** @param shared the model's workers, or null to start {@code threads} workers of its own */
    CpuExperts(ExpertWeights w, CpuKernels kernels, int threads, Workers shared) {
        this.w = w;
        this.kernels = kernels;
        this.ownPool = shared == null ? new WorkerPool(threads) : null;
        this.pool = shared == null ? ownPool : shared;
        threads = pool.threads();
        this.arena = Arena.ofShared();
        this.parts13 = w.w13().groupParts();
        try {
            this.w13 = PanelPacker.pack(w.w13().partsAsExperts(), arena, pool);
            this.w2 = PanelPacker.pack(w.w2(), arena, pool);
        } catch (RuntimeException | Error e) {
            if (ownPool != null) {
                ownPool.close();
            }
            arena.close();
            throw e;
        }
        this.scratch = new Scratch[threads];
        for (int i = 0; i < threads; i++) {
            scratch[i] = new Scratch();
            scratch[i].fit(w13);
            scratch[i].fit(w2);
        }
        this.sharedA13 = expertIndependent(w.a13());
    }

    @Override
    public String backend() {
        return CpuBackend.NAME;
    }

    /** The panels are packed copies: after construction only {@code w}'s shapes, biases and scales are read. */
    @Override
    public boolean readsLoadedWeights() {
        return false;
    }

    /** Bytes of packed weights per expert, w13 and w2 together. */
    long packedBytesPerExpert() {
        return w13.bytesPerExpert() * parts13 + w2.bytesPerExpert();
    }

    @Override
    public void forward(float[] x, int tokens, Routing routing, float[] out) {
        int h = w.hidden();
        if (x.length < (long) tokens * h || out.length < (long) tokens * h) {
            throw new IllegalArgumentException("x and out must hold " + tokens + " × " + h + " values");
        }
        if (routing.tokens() != tokens) {
            throw new IllegalArgumentException("routing is for " + routing.tokens() + " tokens, not " + tokens);
        }
        Arrays.fill(out, 0, tokens * h, 0f);
        TokenGroups groups = TokenGroups.of(routing, w);
        if (groups.pairs() == 0) {
            return;
        }
        float[] shared = sharedA13 && !routing.weightOnInput() ? quantizeTokens(x, tokens) : null;
        for (List<Unit> wave : waves(groups)) {
            new Wave(wave, groups, x, shared, routing.weightOnInput(), out).run();
        }
    }

    /**
     * Whether a13 gives every expert the same result for a token (dynamic formats, or static scales equal across
     * experts), so each token is quantize-dequantized once instead of once per chosen expert.
     */
    private static boolean expertIndependent(ActivationQuant q) {
        return switch (q) {
            case ActivationQuant.None n -> true;
            case ActivationQuant.Mx m -> true;
            case ActivationQuant.Fp8PerToken f -> true;
            case ActivationQuant.Fp8Group f -> true;
            case ActivationQuant.Int8PerToken i -> true;
            case ActivationQuant.Nvfp4 n -> allEqual(n.globalScale());
            case ActivationQuant.Fp8Static f -> allEqual(f.scale());
            case ActivationQuant.Int8Static i -> allEqual(i.scale())
                    && (i.zeroPoint() == null || Arrays.stream(i.zeroPoint()).distinct().count() <= 1);
        };
    }

    private static boolean allEqual(float[] a) {
        for (float v : a) {
            if (Float.floatToIntBits(v) != Float.floatToIntBits(a[0])) {
                return false;
            }
        }
        return true;
    }

    /** a13 applied once to every token (as the input of local expert 0, which stands for all). */
    private float[] quantizeTokens(float[] x, int tokens) {
        int h = w.hidden();
        float[] q = Arrays.copyOf(x, tokens * h);
        if (w.a13() instanceof ActivationQuant.None) {
            return q;
        }
        int per = Math.max(1, Math.ceilDiv(tokens, pool.threads() * 4));
        pool.run(Math.ceilDiv(tokens, per), (task, worker) -> {
            for (int t = task * per, end = Math.min(tokens, t + per); t < end; t++) {
                w.a13().qdqInPlace(q, t * h, h, 0);
            }
        });
        return q;
    }

    /** A run of one expert's pairs [from, to) of the token groups. */
    private record Unit(int expert, int from, int to) {
        int n() {
            return to - from;
        }
    }

    /** A unit's w13 inputs: its tokens and the column plan of each packed part (plans compared as objects). */
    private record InputKey(int[] tokens, ColumnPlan[] plans) {
        @Override
        public boolean equals(Object o) {
            if (!(o instanceof InputKey k) || !Arrays.equals(tokens, k.tokens) || plans.length != k.plans.length) {
                return false;
            }
            for (int i = 0; i < plans.length; i++) {
                if (plans[i] != k.plans[i]) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public int hashCode() {
            int h = Arrays.hashCode(tokens);
            for (ColumnPlan p : plans) {
                h = 31 * h + System.identityHashCode(p);
            }
            return h;
        }
    }

    /** Buffer {@code which} of the calling thread, at least {@code floats} long (fresh above {@link #KEPT_FLOATS}). */
    private float[] buffer(int which, int floats) {
        if (floats > KEPT_FLOATS) {
            return new float[floats];
        }
        float[][] mine = kept.get();
        if (mine[which].length < floats) {
            mine[which] = new float[floats];
        }
        return mine[which];
    }

    /** Splits the groups into units and the units into waves whose buffers fit {@link #WAVE_FLOATS}. */
    private List<List<Unit>> waves(TokenGroups groups) {
        long perPair = (long) w.hidden() * 2 + w.w13().rows() + w.intermediate()
                + (long) w13.plan(0).paddedColumns() * parts13 + w2.plan(0).paddedColumns();
        int maxPairs = (int) Math.max(1, WAVE_FLOATS / perPair);
        List<List<Unit>> waves = new ArrayList<>();
        List<Unit> wave = new ArrayList<>();
        int inWave = 0;
        for (int g = 0; g < groups.groups(); g++) {
            for (int from = groups.start()[g]; from < groups.start()[g + 1]; ) {
                int to = Math.min(groups.start()[g + 1], from + maxPairs - inWave);
                wave.add(new Unit(groups.experts()[g], from, to));
                inWave += to - from;
                from = to;
                if (inWave == maxPairs) {
                    waves.add(wave);
                    wave = new ArrayList<>();
                    inWave = 0;
                }
            }
        }
        if (!wave.isEmpty()) {
            waves.add(wave);
        }
        return waves;
    }

    /** One wave of units through the five loops; its buffers are indexed by pair − first pair of the wave. */
    private final class Wave {
        private final List<Unit> units;
        private final TokenGroups groups;
        private final float[] x;
        private final float[] sharedX;
        private final boolean weightOnInput;
        private final float[] out;
        private final int base;
        private final int pairs;
        private final int[] unitOffset;

        Wave(List<Unit> units, TokenGroups groups, float[] x, float[] sharedX, boolean weightOnInput, float[] out) {
            this.units = units;
            this.groups = groups;
            this.x = x;
            this.sharedX = sharedX;
            this.weightOnInput = weightOnInput;
            this.out = out;
            this.base = units.getFirst().from();
            this.pairs = units.getLast().to() - base;
            this.unitOffset = new int[units.size()];
            for (int u = 0; u < units.size(); u++) {
                unitOffset[u] = units.get(u).from() - base;
            }
        }

        void run() {
            int h = w.hidden();
            int inter = w.intermediate();
            int rows13 = w.w13().rows();
            Inputs[][] in13 = new Inputs[units.size()][];
            int[] first = firstWithSameInputs();
            int[] distinct = IntStream.range(0, first.length).filter(u -> first[u] == u).toArray();
            pool.run(distinct.length, (i, worker) -> in13[distinct[i]] = expertInputs(units.get(distinct[i])));
            for (int u = 0; u < first.length; u++) {
                in13[u] = in13[first[u]];
            }

            float[] h1 = buffer(0, pairs * rows13);
            multiplyAll(w13, parts13, in13, h1, w.w13Bias());

            float[] act = buffer(1, pairs * inter);
            Inputs[][] in2 = new Inputs[units.size()][1];
            pool.run(units.size(), (u, worker) -> {
                Unit unit = units.get(u);
                for (int i = unitOffset[u]; i < unitOffset[u] + unit.n(); i++) {
                    kernels.activate(w.activation(), w.gateLayout(), w.swigluLimit(), inter, h1, i * rows13, act,
                            i * inter);
                    w.a2().qdqInPlace(act, i * inter, inter, unit.expert());
                }
                in2[u][0] = kernels.prepare(w2, unit.expert(), act, unitOffset[u] * inter, unit.n());
            });

            float[] y = buffer(2, pairs * h);
            multiplyAll(w2, 1, in2, y, w.w2Bias());
            combine(y);
        }

        /**
         * For each unit, the first unit whose w13 inputs are the same: the same tokens, each fed to every expert alike
         * (a shared a13 result, no router weight on the input), and the same column plans. One token's chosen
         * experts then share one prepared input instead of each preparing its own (8 of 8 at Qwen3's one-token decode).
         */
        private int[] firstWithSameInputs() {
            int[] first = IntStream.range(0, units.size()).toArray();
            if (sharedX == null) {
                return first;
            }
            Map<InputKey, Integer> seen = new HashMap<>();
            for (int u = 0; u < first.length; u++) {
                Unit unit = units.get(u);
                ColumnPlan[] plans = new ColumnPlan[parts13];
                for (int k = 0; k < parts13; k++) {
                    plans[k] = w13.plan(unit.expert() * parts13 + k);
                }
                int[] tokens = Arrays.copyOfRange(groups.token(), unit.from(), unit.to());
                Integer earlier = seen.putIfAbsent(new InputKey(tokens, plans), u);
                if (earlier != null) {
                    first[u] = earlier;
                }
            }
            return first;
        }

        /**
         * The unit's tokens as its expert's w13 inputs, one per packed part: scaled by the router weight if so routed,
         * then a13.
         */
        private Inputs[] expertInputs(Unit unit) {
            int h = w.hidden();
            int n = unit.n();
            Inputs[] in = new Inputs[parts13];
            if (sharedX != null && n == 1) {
                // one token fed to every expert alike: prepared from its row where it lies, no copy
                int t = groups.token()[unit.from()];
                for (int k = 0; k < parts13; k++) {
                    in[k] = kernels.prepare(w13, unit.expert() * parts13 + k, sharedX, t * h, 1);
                }
                return in;
            }
            float[] xin = new float[n * h];
            for (int i = 0; i < n; i++) {
                int pair = unit.from() + i;
                int t = groups.token()[pair];
                if (sharedX != null) {
                    System.arraycopy(sharedX, t * h, xin, i * h, h);
                    continue;
                }
                float scale = weightOnInput ? groups.weight()[pair] : 1f;
                for (int c = 0; c < h; c++) {
                    xin[i * h + c] = x[t * h + c] * scale;
                }
                w.a13().qdqInPlace(xin, i * h, h, unit.expert());
            }
            for (int k = 0; k < parts13; k++) {
                in[k] = kernels.prepare(w13, unit.expert() * parts13 + k, xin, 0, n);
            }
            return in;
        }

        /**
         * y[pair·rows + r] = W_e · input + bias for every unit, over (unit, part, row block) tasks: m holds each
         * expert as {@code parts} packed experts of m.rows() rows (part k's rows are k·m.rows() + r of the whole).
         */
        private void multiplyAll(PanelMatrix m, int parts, Inputs[][] in, float[] y, float[] bias) {
            int partRows = m.rows();
            int rows = partRows * parts;
            int block = rowBlock(partRows);
            int blocks = Math.ceilDiv(partRows, block);
            pool.run(units.size() * parts * blocks, (task, worker) -> {
                int u = task / (parts * blocks);
                int k = task / blocks % parts;
                int r0 = (task % blocks) * block;
                int r1 = Math.min(partRows, r0 + block);
                Unit unit = units.get(u);
                int yOff = unitOffset[u] * rows + k * partRows;
                kernels.multiply(m, unit.expert() * parts + k, r0, r1, in[u][k], y, yOff, rows, scratch[worker]);
                if (bias != null) {
                    int b = unit.expert() * rows + k * partRows;
                    for (int i = 0; i < unit.n(); i++) {
                        kernels.addScaled(1f, bias, b + r0, y, yOff + i * rows + r0, r1 - r0);
                    }
                }
            });
        }

        /**
         * Rows per task: a multiple of the panel height, small enough that every worker gets several tasks per
         * unit to balance the load, large enough that a task's per-call cost stays negligible.
         */
        private int rowBlock(int rows) {
            int perUnit = Math.max(1, pool.threads() * TASKS_PER_THREAD / units.size());
            int block = Math.ceilDiv(Math.ceilDiv(rows, perUnit), PanelMatrix.LANES) * PanelMatrix.LANES;
            return Math.max(block, 4 * PanelMatrix.LANES);
        }

        /**
         * out[t] += weight · y[pair] over the wave's pairs in pair order, in column blocks so no two tasks write the
         * same value; a small wave on the calling thread alone, where the loop's fork and join cost more than its
         * sums (every wave of a decode step).
         */
        private void combine(float[] y) {
            int h = w.hidden();
            if ((long) pairs * h <= INLINE_COMBINE_FLOATS) {
                combineColumns(y, 0, h);
                return;
            }
            int block = Math.max(256, Math.ceilDiv(h, pool.threads() * 2));
            int blocks = Math.ceilDiv(h, block);
            pool.run(blocks, (task, worker) -> combineColumns(y, task * block, Math.min(h, (task + 1) * block)));
        }

        private void combineColumns(float[] y, int c0, int c1) {
            int h = w.hidden();
            for (int i = 0; i < pairs; i++) {
                int pair = base + i;
                int t = groups.token()[pair];
                float scale = weightOnInput ? 1f : groups.weight()[pair];
                kernels.addScaled(scale, y, i * h + c0, out, t * h + c0, c1 - c0);
            }
        }
    }

    @Override
    public void close() {
        if (ownPool != null) {
            ownPool.close();
        }
        arena.close();
    }
}

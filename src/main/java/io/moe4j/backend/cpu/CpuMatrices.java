package io.moe4j.backend.cpu;

import io.moe4j.backend.Workers;
import io.moe4j.quant.ExpertMatrix;

import java.lang.foreign.Arena;

/**
 * The CPU kernels of the experts for single matrices (the dense linears of a decoder): a matrix is repacked once
 * into the panel layout ({@link PanelPacker}) and multiplied with a batch of inputs by the fused GEMV (a few tokens)
 * or the decode-then-dot path (more), over blocks of output rows on one worker pool that every matrix of a model
 * shares. Per-call state lives in the call; the pool runs one loop at a time, so concurrent calls are safe.
 */
public final class CpuMatrices implements AutoCloseable {
    /** Rows × columns a task should have at least, so that small matrices run on one thread without wake-ups. */
    private static final long MIN_TASK_WEIGHTS = 1L << 16;
    /**
     * Tasks a worker gets per product, at most: more balance the loop's end (a worker that finishes early cannot
     * help with a task under way), fewer cost less per task. 16, not 4: on the 16-core Xeon a one-token product's
     * last tasks kept the other workers waiting (gpt-oss-20b decode, with the experts' 32 of {@link CpuExperts}:
     * 64.8-69.6 against 69.8-78.2 ms a token over four pairs of runs; docs/model-bench.md). {@code
     * -Dmoe4j.cpu.linearTasksPerThread} (1-256) sets it, to measure.
     */
    private static final int TASKS_PER_THREAD = Math.clamp(Integer.getInteger("moe4j.cpu.linearTasksPerThread", 16),
            1, 256);

    private final CpuKernels kernels;
    private final Workers pool;
    /** The pool started for these matrices (closed with them), or null on a model's shared workers. */
    private final WorkerPool ownPool;
    private final Scratch[] scratch;

    /** Matrices on {@code threads} workers of their own, closed with them. */
    public CpuMatrices(int threads) {
        this(new WorkerPool(threads), true);
    }

    /** Matrices on a model's shared workers, which {@link #close()} leaves running. */
    public CpuMatrices(Workers shared) {
        this(shared, false);
    }

    private CpuMatrices(Workers pool, boolean owns) {
        this.kernels = KernelSelection.select();
        this.pool = pool;
        this.ownPool = owns ? (WorkerPool) pool : null;
        int threads = pool.threads();
        this.scratch = new Scratch[threads];
        for (int i = 0; i < threads; i++) {
            scratch[i] = new Scratch();
        }
    }

    /** {@code vector} or {@code scalar}. */
    public String kernels() {
        return kernels.name();
    }

    public int threads() {
        return pool.threads();
    }

    /** One matrix in the kernels' layout. */
    public static final class Packed {
        private final PanelMatrix m;

        private Packed(PanelMatrix m) {
            this.m = m;
        }

        public int rows() {
            return m.rows();
        }

        public int cols() {
            return m.cols();
        }

        /** Bytes a multiplication streams: codes, scales and zero points as packed. */
        public long bytes() {
            return m.bytesPerExpert();
        }
    }

    /** Repacks expert 0 of a one-expert matrix into {@code arena}; fails on NaN or infinite weight codes. */
    public Packed pack(ExpertMatrix matrix, Arena arena) {
        if (matrix.experts() != 1) {
            throw new IllegalArgumentException("CpuMatrices packs one matrix, not a stack of " + matrix.experts());
        }
        return new Packed(PanelPacker.pack(matrix, arena, pool));
    }

    /** y[t·rows + r] = Σ_c W[r][c] · x[t·cols + c] for the {@code tokens} rows of x; y is overwritten. */
    public void multiply(Packed packed, float[] x, int tokens, float[] y) {
        PanelMatrix m = packed.m;
        int rows = m.rows();
        int cols = m.cols();
        if (x.length < (long) tokens * cols || y.length < (long) tokens * rows) {
            throw new IllegalArgumentException("x must hold " + tokens + " × " + cols + " and y " + tokens + " × "
                    + rows + " values");
        }
        if (tokens == 0) {
            return;
        }
        Inputs in = kernels.prepare(m, 0, x, 0, tokens);
        int panels = m.panels();
        long work = (long) rows * cols * Math.min(tokens, 8);
        long most = Math.min(panels, (long) pool.threads() * TASKS_PER_THREAD);
        int tasks = (int) Math.max(1, Math.min(most, work / MIN_TASK_WEIGHTS));
        int panelsPerTask = Math.ceilDiv(panels, tasks);
        pool.run(Math.ceilDiv(panels, panelsPerTask), (task, worker) -> {
            int r0 = task * panelsPerTask * PanelMatrix.LANES;
            int r1 = Math.min(rows, r0 + panelsPerTask * PanelMatrix.LANES);
            Scratch s = scratch[worker];
            s.fit(m);
            kernels.multiply(m, 0, r0, r1, in, y, 0, rows, s);
        });
    }

    @Override
    public void close() {
        if (ownPool != null) {
            ownPool.close();
        }
    }
}

package io.moe4j.backend.cpu;

import java.util.List;

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
        multiplyAll(List.of(packed), List.of(x), tokens, List.of(y));
    }

    /**
     * Several products of the same number of tokens, {@code ys[i] = packed[i] · xs[i]} as {@link #multiply} each, in
     * one loop over the workers: they wait for one loop's last task instead of one a matrix (the attention's q, k and
     * v of a decode step, three loops of which two are small).
     */
    public void multiplyAll(List<Packed> packed, List<float[]> xs, int tokens, List<float[]> ys) {
        int n = packed.size();
        if (xs.size() != n || ys.size() != n) {
            throw new IllegalArgumentException(n + " matrices, " + xs.size() + " inputs and " + ys.size() + " outputs");
        }
        PanelMatrix[] m = new PanelMatrix[n];
        for (int i = 0; i < n; i++) {
            m[i] = packed.get(i).m;
            if (xs.get(i).length < (long) tokens * m[i].cols() || ys.get(i).length < (long) tokens * m[i].rows()) {
                throw new IllegalArgumentException("x must hold " + tokens + " × " + m[i].cols() + " and y " + tokens
                        + " × " + m[i].rows() + " values");
            }
        }
        if (tokens == 0) {
            return;
        }
        Inputs[] in = new Inputs[n];
        int[] panelsPerTask = new int[n];
        int[] firstTask = new int[n + 1];
        for (int i = 0; i < n; i++) {
            in[i] = kernels.prepare(m[i], 0, xs.get(i), 0, tokens);
            int panels = m[i].panels();
            long work = (long) m[i].rows() * m[i].cols() * Math.min(tokens, 8);
            long most = Math.min(panels, (long) pool.threads() * TASKS_PER_THREAD);
            int tasks = (int) Math.max(1, Math.min(most, work / MIN_TASK_WEIGHTS));
            panelsPerTask[i] = Math.ceilDiv(panels, tasks);
            firstTask[i + 1] = firstTask[i] + Math.ceilDiv(panels, panelsPerTask[i]);
        }
        pool.run(firstTask[n], (task, worker) -> {
            int i = 0;
            while (task >= firstTask[i + 1]) {
                i++;
            }
            int rows = m[i].rows();
            int r0 = (task - firstTask[i]) * panelsPerTask[i] * PanelMatrix.LANES;
            int r1 = Math.min(rows, r0 + panelsPerTask[i] * PanelMatrix.LANES);
            Scratch s = scratch[worker];
            s.fit(m[i]);
            kernels.multiply(m[i], 0, r0, r1, in[i], ys.get(i), 0, rows, s);
        });
    }

    @Override
    public void close() {
        if (ownPool != null) {
            ownPool.close();
        }
    }
}

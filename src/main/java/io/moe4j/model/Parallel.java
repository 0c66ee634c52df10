package io.moe4j.model;

import io.moe4j.backend.Workers;
import io.moe4j.backend.cpu.WorkerPool;

import java.util.function.IntConsumer;

/**
 * Work split by item (an attention head, a block of rows) on the model's shared {@link Workers}, the threads its MoE
 * layers and linears run on too. Small calls stay on the caller's thread; the first exception of an item is
 * rethrown to the caller.
 */
public final class Parallel implements AutoCloseable {
    /** Below this many multiply-adds in all, handing work to the pool costs more than it saves. */
    static final long MIN_PARALLEL_WORK = 1 << 16;

    private final Workers workers;
    /** Set when this object started the workers itself (and so closes them). */
    private final WorkerPool own;

    /** Items on the given shared workers, which {@link #close()} leaves running. */
    public Parallel(Workers workers) {
        this.workers = workers;
        this.own = null;
    }

    /** Items on {@code threads} workers of its own, closed with it. */
    public Parallel(int threads) {
        this.own = new WorkerPool(threads);
        this.workers = own;
    }

    public int threads() {
        return workers.threads();
    }

    /**
     * How many of a group's {@code size} items one task takes (at most {@code most}), when {@code groups} groups
     * are split alike: the most that still leaves two tasks a thread, halving down to one. With one task a thread
     * a call waits for its slowest; with fewer items a task, items that could share loads (attention heads reading
     * the same keys) are split apart, so this trades the two.
     */
    public int perTask(int most, int size, long groups) {
        int perTask = Math.max(1, Math.min(most, size));
        while (perTask > 1 && groups * Math.ceilDiv(size, perTask) < 2L * threads()) {
            perTask = Math.ceilDiv(perTask, 2);
        }
        return perTask;
    }

    /** The workers the items run on. */
    public Workers workers() {
        return workers;
    }

    /**
     * Runs body(0) .. body(n - 1), each once, and returns when all are done.
     *
     * @param workPerItem about how many multiply-adds one item does, to keep small calls on the caller's thread
     */
    public void forEach(int n, long workPerItem, IntConsumer body) {
        if (workers.threads() == 1 || n <= 1 || n * workPerItem < MIN_PARALLEL_WORK) {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
            return;
        }
        workers.run(n, (item, worker) -> body.accept(item));
    }

    @Override
    public void close() {
        if (own != null) {
            own.close();
        }
    }
}

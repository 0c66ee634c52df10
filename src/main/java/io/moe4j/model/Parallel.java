package io.moe4j.model;

import java.util.concurrent.ForkJoinPool;
import java.util.function.IntConsumer;
import java.util.stream.IntStream;

/**
 * The model's worker threads for work split by attention head. One thread (or one item) runs on the caller;
 * otherwise the items run on a pool the model owns, and the first exception of an item is rethrown to the caller.
 */
public final class Parallel implements AutoCloseable {
    /** Below this many multiply-adds in all, handing work to the pool costs more than it saves. */
    static final long MIN_PARALLEL_WORK = 1 << 16;

    private final ForkJoinPool pool;

    public Parallel(int threads) {
        this.pool = threads > 1 ? new ForkJoinPool(threads) : null;
    }

    /**
     * Runs body(0) .. body(n - 1), each once, and returns when all are done.
     *
     * @param workPerItem about how many multiply-adds one item does, to keep small calls on the caller's thread
     */
    public void forEach(int n, long workPerItem, IntConsumer body) {
        if (pool == null || n <= 1 || n * workPerItem < MIN_PARALLEL_WORK) {
            for (int i = 0; i < n; i++) {
                body.accept(i);
            }
            return;
        }
        pool.submit(() -> IntStream.range(0, n).parallel().forEach(body)).join();
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
        }
    }
}

package io.moe4j.model.cuda;

import io.moe4j.MoeException;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One thread a rank (a GPU: NCCL wants each device's collectives from its own thread) and the lockstep of work on all
 * of them: {@link #onEvery} runs a task on every rank at once and returns when all are done. Tasks of different ranks
 * wait on each other inside collectives, so when one fails the others could wait forever: the first failure calls
 * {@code abort} (aborting the communicators releases them), the others get a bounded time to end, and the failure is
 * rethrown and kept, so that every later call refuses to run, naming it.
 */
final class RankThreads implements AutoCloseable {
    /** How long the other ranks get to end once one has failed and {@code abort} ran. */
    static final long AFTER_FAILURE_MILLIS = 60_000;
    /** How often a wait for one rank looks at the others. */
    private static final long WATCH_MILLIS = 50;

    private final List<ExecutorService> threads = new ArrayList<>();
    private final Runnable abort;
    private final long afterFailureMillis;
    private Throwable failure;
    private boolean closed;

    /**
     * @param name  the threads' names, followed by the rank
     * @param abort releases ranks waiting on the failed one (aborts the communicators); called once, on the first
     *              failure
     */
    RankThreads(int ranks, String name, Runnable abort) {
        this(ranks, name, abort, AFTER_FAILURE_MILLIS);
    }

    RankThreads(int ranks, String name, Runnable abort, long afterFailureMillis) {
        this.abort = abort;
        this.afterFailureMillis = afterFailureMillis;
        for (int r = 0; r < ranks; r++) {
            String thread = name + r;
            threads.add(Executors.newSingleThreadExecutor(task -> {
                Thread t = new Thread(task, thread);
                t.setDaemon(true);
                return t;
            }));
        }
    }

    int ranks() {
        return threads.size();
    }

    /** Runs {@code work} on rank {@code rank}'s thread alone (no collective: loading, a sequence's own buffers). */
    synchronized <T> T on(int rank, Callable<T> work) {
        checkUsable();
        return get(threads.get(rank).submit(work));
    }

    /**
     * Runs {@code work.get(r)} on every rank r at once; returns their results in rank order. On a failure: aborts,
     * waits a bounded time for the other ranks, then rethrows the first failure (a {@link RuntimeException} as it
     * is), which every later call names.
     */
    synchronized List<Object> onEvery(List<? extends Callable<?>> work) {
        checkUsable();
        if (work.size() != threads.size()) {
            throw new IllegalArgumentException(work.size() + " tasks for " + threads.size() + " ranks");
        }
        List<Future<?>> all = new ArrayList<>();
        for (int r = 0; r < threads.size(); r++) {
            all.add(threads.get(r).submit(work.get(r)));
        }
        Throwable first = null;
        for (Future<?> f : all) {
            try {
                if (first == null) {
                    waitWatching(f, all);
                } else {
                    f.get(afterFailureMillis, TimeUnit.MILLISECONDS);
                }
            } catch (ExecutionException e) {
                if (first == null) {
                    first = e.getCause();
                    abort.run();
                }
            } catch (TimeoutException e) {
                f.cancel(true);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                if (first == null) {
                    first = e;
                    abort.run();
                }
            }
        }
        if (first != null) {
            failure = first;
            throw first instanceof RuntimeException re ? re
                    : new MoeException("a GPU rank failed: " + first, first);
        }
        List<Object> results = new ArrayList<>();
        for (Future<?> f : all) {
            results.add(get(f));
        }
        return results;
    }

    /** Waits for {@code f}, throwing as soon as any other rank's task has failed (it may never end otherwise). */
    private static void waitWatching(Future<?> f, List<Future<?>> all) throws ExecutionException,
            InterruptedException {
        while (true) {
            try {
                f.get(WATCH_MILLIS, TimeUnit.MILLISECONDS);
                return;
            } catch (TimeoutException e) {
                for (Future<?> other : all) {
                    if (other != f && other.isDone()) {
                        other.get(); // throws the other's failure, if it failed
                    }
                }
            }
        }
    }

    /** The failure that stopped this lockstep, or null. */
    synchronized Throwable failure() {
        return failure;
    }

    private void checkUsable() {
        if (closed) {
            throw new IllegalStateException("the GPU ranks are closed");
        }
        if (failure != null) {
            throw new MoeException("the expert-parallel model cannot run: a pass failed earlier (" + failure
                    + "); load it again", failure);
        }
    }

    private static <T> T get(Future<T> f) {
        try {
            return f.get();
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof RuntimeException re) {
                throw re;
            }
            if (c instanceof Error err) {
                throw err;
            }
            throw new MoeException(c.toString(), c);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new MoeException("interrupted while a GPU rank worked", e);
        }
    }

    /** Runs {@code work} on every rank, one after another, even after a failure (closing); collects what fails. */
    synchronized void finallyOnEach(List<? extends Callable<?>> work, RuntimeException into) {
        for (int r = 0; r < threads.size(); r++) {
            try {
                get(threads.get(r).submit(work.get(r)));
            } catch (RuntimeException e) {
                into.addSuppressed(e);
            }
        }
    }

    boolean isClosed() {
        return closed;
    }

    @Override
    public synchronized void close() {
        closed = true;
        threads.forEach(ExecutorService::shutdown);
    }
}

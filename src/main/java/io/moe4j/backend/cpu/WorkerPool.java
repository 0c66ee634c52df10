package io.moe4j.backend.cpu;

import io.moe4j.backend.Workers;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A fixed set of threads that run parallel loops. A model owns one and passes it to every layer, linear and
 * attention block (see {@link Workers}); a layer or matrix set loaded on its own owns its pool and closes it. The
 * calling thread takes part as worker 0, so {@code threads} = 1 runs everything inline. Workers spin briefly before
 * parking: a decode step is a few dozen loops of tens to hundreds of microseconds each, with little between them,
 * and waking a parked thread costs tens of microseconds. One loop runs at a time; concurrent callers take turns, and
 * a loop started from inside another loop's body runs inline on the worker that started it (the outer loop already
 * holds every worker).
 */
public final class WorkerPool implements Workers, AutoCloseable {
    private static final long SPIN_NANOS = 200_000;

    /** The worker index of the current thread while it runs a task of this pool's loops, else −1. */
    private final ThreadLocal<int[]> inside = ThreadLocal.withInitial(() -> new int[] {-1});

    private final int threads;
    private final Thread[] workers;
    private final ReentrantLock turn = new ReentrantLock();
    private volatile Job job;
    private volatile boolean closed;

    public WorkerPool(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        this.threads = threads;
        this.workers = new Thread[threads - 1];
        for (int i = 0; i < workers.length; i++) {
            int id = i + 1;
            workers[i] = Thread.ofPlatform().daemon().name("moe4j-cpu-" + id).unstarted(() -> work(id));
            workers[i].start();
        }
    }

    @Override
    public int threads() {
        return threads;
    }

    /** Runs body for tasks 0 .. tasks−1 on all workers and returns when all are done; rethrows the first failure. */
    @Override
    public void run(int tasks, Task body) {
        if (tasks <= 0) {
            return;
        }
        if (closed) {
            throw new IllegalStateException("worker pool is closed");
        }
        int[] me = inside.get();
        if (me[0] >= 0) {
            // Nested in a task of this pool: every other worker may be busy with the outer loop, so run here.
            for (int t = 0; t < tasks; t++) {
                body.run(t, me[0]);
            }
            return;
        }
        turn.lock();
        try {
            Job j = new Job(tasks, body, Thread.currentThread());
            if (workers.length > 0 && tasks > 1) {
                job = j;
                for (Thread w : workers) {
                    LockSupport.unpark(w);
                }
            }
            me[0] = 0;
            try {
                j.participate(0);
            } finally {
                me[0] = -1;
            }
            j.awaitDone();
            job = null; // drop the loop body (and what it captured) once every task has run
            if (j.failure != null) {
                if (j.failure instanceof RuntimeException r) {
                    throw r;
                }
                if (j.failure instanceof Error e) {
                    throw e;
                }
                throw new IllegalStateException(j.failure);
            }
        } finally {
            turn.unlock();
        }
    }

    private void work(int id) {
        Job seen = null;
        while (!closed) {
            Job j = job;
            if (j == null || j == seen) {
                idle(seen);
                continue;
            }
            seen = j;
            int[] me = inside.get();
            me[0] = id;
            try {
                j.participate(id);
            } finally {
                me[0] = -1;
            }
        }
    }

    /** Waits for a job other than {@code seen}: spins a while, then parks until unparked. */
    private void idle(Job seen) {
        long until = System.nanoTime() + SPIN_NANOS;
        for (Job j = job; (j == null || j == seen) && !closed; j = job) {
            if (System.nanoTime() > until) {
                LockSupport.park(this);
                return;
            }
            Thread.onSpinWait();
        }
    }

    @Override
    public void close() {
        closed = true;
        for (Thread w : workers) {
            LockSupport.unpark(w);
        }
        for (Thread w : workers) {
            try {
                w.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static final class Job {
        final int tasks;
        final Task body;
        final Thread caller;
        final AtomicInteger next = new AtomicInteger();
        final AtomicInteger done = new AtomicInteger();
        volatile Throwable failure;

        Job(int tasks, Task body, Thread caller) {
            this.tasks = tasks;
            this.body = body;
            this.caller = caller;
        }

        void participate(int worker) {
            int t;
            while ((t = next.getAndIncrement()) < tasks) {
                try {
                    if (failure == null) {
                        body.run(t, worker);
                    }
                } catch (Throwable e) {
                    if (failure == null) {
                        failure = e;
                    }
                } finally {
                    if (done.incrementAndGet() == tasks) {
                        LockSupport.unpark(caller);
                    }
                }
            }
        }

        void awaitDone() {
            long until = System.nanoTime() + SPIN_NANOS;
            while (done.get() < tasks) {
                if (System.nanoTime() > until) {
                    LockSupport.parkNanos(this, 100_000);
                } else {
                    Thread.onSpinWait();
                }
            }
        }
    }
}

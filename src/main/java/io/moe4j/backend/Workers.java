package io.moe4j.backend;

/**
 * Threads that run parallel loops. A model makes one set and hands it to every layer, linear and attention block
 * that runs on the host, so that a token's parallel sections run one after another on the same threads: a set per
 * layer would leave the idle sets' threads spinning on cores the busy set needs.
 */
public interface Workers {
    /** The body of a parallel loop: task index and the index of the worker running it (0 .. threads−1). */
    @FunctionalInterface
    interface Task {
        void run(int task, int worker);
    }

    /** How many workers run a loop, the caller included: worker indices are 0 .. threads−1. */
    int threads();

    /**
     * Runs body for tasks 0 .. tasks−1 and returns when all are done; rethrows the first failure. A call made from
     * inside a running loop's body runs its tasks inline on the calling worker, under that worker's index.
     */
    void run(int tasks, Task body);
}

package io.moe4j.backend.cpu;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicIntegerArray;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class WorkerPoolTest {

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3})
    void runsEveryTaskOnceWithWorkerIndicesInRange(int threads) {
        try (WorkerPool pool = new WorkerPool(threads)) {
            for (int round = 0; round < 200; round++) {
                int tasks = round % 17;
                AtomicIntegerArray runs = new AtomicIntegerArray(Math.max(tasks, 1));
                Set<Integer> workers = ConcurrentHashMap.newKeySet();
                pool.run(tasks, (t, w) -> {
                    runs.incrementAndGet(t);
                    workers.add(w);
                });
                for (int t = 0; t < tasks; t++) {
                    assertThat(runs.get(t)).as("task %d of %d in round %d", t, tasks, round).isEqualTo(1);
                }
                assertThat(workers).allMatch(w -> w >= 0 && w < threads);
            }
        }
    }

    @Test
    void rethrowsTheFirstFailureAndStaysUsable() {
        try (WorkerPool pool = new WorkerPool(2)) {
            assertThatThrownBy(() -> pool.run(8, (t, w) -> {
                if (t == 5) {
                    throw new IllegalStateException("task 5 failed");
                }
            })).isInstanceOf(IllegalStateException.class).hasMessage("task 5 failed");
            AtomicIntegerArray runs = new AtomicIntegerArray(4);
            pool.run(4, (t, w) -> runs.incrementAndGet(t));
            assertThat(runs.toString()).isEqualTo("[1, 1, 1, 1]");
        }
    }

    @Test
    void closeStopsTheWorkers() {
        WorkerPool pool = new WorkerPool(3);
        Set<Thread> threads = ConcurrentHashMap.newKeySet();
        pool.run(64, (t, w) -> {
            threads.add(Thread.currentThread());
            try {
                Thread.sleep(1); // long enough that the workers take tasks too
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        threads.remove(Thread.currentThread());
        assertThat(threads).isNotEmpty().allMatch(Thread::isAlive);
        pool.close();
        assertThat(threads).allMatch(t -> !t.isAlive());
        assertThatThrownBy(() -> pool.run(1, (t, w) -> {
        })).isInstanceOf(IllegalStateException.class);
    }

    @Test
    @org.junit.jupiter.api.Timeout(30) // a nested loop that waited for the pool its caller holds would hang, not fail
    void aLoopStartedInsideATaskRunsInlineOnThatWorker() {
        try (WorkerPool pool = new WorkerPool(3)) {
            for (int round = 0; round < 50; round++) {
                AtomicIntegerArray inner = new AtomicIntegerArray(8 * 5);
                AtomicIntegerArray mismatched = new AtomicIntegerArray(1);
                pool.run(8, (outer, w) -> {
                    Thread me = Thread.currentThread();
                    pool.run(5, (t, w2) -> {
                        inner.incrementAndGet(outer * 5 + t);
                        if (w2 != w || Thread.currentThread() != me) {
                            mismatched.incrementAndGet(0);
                        }
                    });
                });
                for (int i = 0; i < inner.length(); i++) {
                    assertThat(inner.get(i)).as("inner task %d in round %d", i, round).isEqualTo(1);
                }
                assertThat(mismatched.get(0)).as("inner tasks off their outer worker").isZero();
            }
            // and the pool still hands out work to its threads afterwards
            Set<Integer> workers = ConcurrentHashMap.newKeySet();
            pool.run(64, (t, w) -> {
                workers.add(w);
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            assertThat(workers).hasSizeGreaterThan(1);
        }
    }
}

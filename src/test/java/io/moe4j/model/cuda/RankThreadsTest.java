package io.moe4j.model.cuda;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The lockstep of GPU ranks without GPUs: tasks that wait on each other as collectives do. A rank that fails while
 * another waits for it must not hang the call: the abort releases the waiter, the failure comes back, and later
 * calls refuse to run, naming it.
 */
class RankThreadsTest {

    @Test
    void everyRankRunsOnItsOwnThreadAtOnceAndResultsComeBackInRankOrder() {
        CountDownLatch allStarted = new CountDownLatch(3);
        try (RankThreads threads = new RankThreads(3, "rank-", () -> { })) {
            List<Callable<?>> work = List.of(rank(allStarted, 0), rank(allStarted, 1), rank(allStarted, 2));
            assertThat(threads.onEvery(work)).containsExactly("rank-0", "rank-1", "rank-2");
            assertThat(threads.on(1, () -> Thread.currentThread().getName())).isEqualTo("rank-1");
        }
    }

    /** Each task waits until all have started (as ranks inside a collective), then names its thread. */
    private static Callable<String> rank(CountDownLatch allStarted, int r) {
        return () -> {
            allStarted.countDown();
            if (!allStarted.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("rank " + r + ": the others never started");
            }
            return Thread.currentThread().getName();
        };
    }

    @Test
    @Timeout(30)
    void aFailingRankAbortsTheOthersWaitAndLaterCallsNameTheFailure() {
        CountDownLatch aborted = new CountDownLatch(1);
        AtomicInteger aborts = new AtomicInteger();
        try (RankThreads threads = new RankThreads(2, "rank-", () -> {
            aborts.incrementAndGet();
            aborted.countDown();
        })) {
            Callable<Object> waitsForever = () -> {
                // a collective whose peer never comes: only the abort lets it return
                aborted.await();
                throw new IllegalStateException("collective aborted");
            };
            Callable<Object> fails = () -> {
                Thread.sleep(100);
                throw new IllegalArgumentException("rank 1: bad shape");
            };
            assertThatThrownBy(() -> threads.onEvery(List.of(waitsForever, fails)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessage("rank 1: bad shape");
            assertThat(aborts).hasValue(1);
            assertThat(threads.failure()).hasMessage("rank 1: bad shape");
            assertThatThrownBy(() -> threads.onEvery(List.of(() -> 1, () -> 2))).isInstanceOf(MoeException.class)
                    .hasMessageContaining("a pass failed earlier").hasMessageContaining("rank 1: bad shape");
            assertThatThrownBy(() -> threads.on(0, () -> 1)).isInstanceOf(MoeException.class)
                    .hasMessageContaining("rank 1: bad shape");
        }
    }

    @Test
    @Timeout(30)
    void aRankThatNeverEndsAfterTheAbortIsGivenUpOnAfterItsTime() {
        CountDownLatch never = new CountDownLatch(1);
        try (RankThreads threads = new RankThreads(2, "rank-", () -> { }, 200)) {
            Callable<Object> stuck = () -> {
                never.await(); // ignores the abort; interrupted when given up on
                return null;
            };
            Callable<Object> fails = () -> {
                throw new IllegalStateException("device fault");
            };
            assertThatThrownBy(() -> threads.onEvery(List.of(stuck, fails))).hasMessage("device fault");
        }
    }

    @Test
    void closedThreadsRefuseWork() {
        RankThreads threads = new RankThreads(1, "rank-", () -> { });
        threads.close();
        assertThat(threads.isClosed()).isTrue();
        assertThatThrownBy(() -> threads.on(0, () -> 1)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(() -> threads.onEvery(List.of(() -> 1, () -> 2))).isInstanceOf(IllegalStateException.class);
    }
}

package io.moe4j.model;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The cache rows: appended in order, dropped from the front, kept intact through growth and compaction. */
class KvBufferTest {

    static float[] rows(long firstPosition, int n, int width) {
        float[] r = new float[n * width];
        for (int i = 0; i < n; i++) {
            for (int w = 0; w < width; w++) {
                r[i * width + w] = (firstPosition + i) * 10 + w;
            }
        }
        return r;
    }

    @Test
    void aSlidingWindowKeepsItsRowsIntactOverManyAppends() {
        int width = 3;
        KvBuffer b = new KvBuffer(width);
        AttentionWindow window = AttentionWindow.sliding(5);
        long next = 0;
        for (int step = 0; step < 200; step++) {
            int n = 1 + step % 4;
            KvBuffer.checkContinues(b, next);
            b.append(rows(next, n, width), n);
            next += n;
            b.dropBefore(window.keepFrom(next));
            assertThat(b.rows()).isEqualTo((int) Math.min(next, 4));
            for (long p = b.first(); p < b.end(); p++) {
                assertThat(b.data()[b.offset(p) + 2]).isEqualTo(p * 10 + 2);
            }
        }
        assertThat(b.data().length).as("compaction, not endless growth").isLessThan(64 * width);
    }

    @Test
    void positionsOutsideTheCacheAndOutOfOrderFeedsAreRefused() {
        KvBuffer b = new KvBuffer(2);
        b.append(rows(0, 3, 2), 3);
        b.dropBefore(1);
        assertThatThrownBy(() -> b.offset(0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> b.offset(3)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> KvBuffer.checkContinues(b, 5)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("in order");
        b.clear();
        assertThat(b.end()).isZero();
    }
}

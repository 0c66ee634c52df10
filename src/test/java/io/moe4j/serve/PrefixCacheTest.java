package io.moe4j.serve;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Which kept sequence a prompt takes, and what happens to the others. */
class PrefixCacheTest {
    /** A sequence that records what is done to it; it rewinds no further back than {@code floor}. */
    private static final class Fake implements StepModel.Sequence {
        final int floor;
        int length;
        boolean closed;
        final List<Integer> rewinds = new ArrayList<>();

        Fake(int length, int floor) {
            this.length = length;
            this.floor = floor;
        }

        @Override
        public int length() {
            return length;
        }

        @Override
        public boolean rewind(int to) {
            rewinds.add(to);
            if (to < floor) {
                return false;
            }
            length = to;
            return true;
        }

        @Override
        public void close() {
            closed = true;
        }
    }

    private static int[] tokens(int from, int n) {
        int[] t = new int[n];
        for (int i = 0; i < n; i++) {
            t[i] = from + i;
        }
        return t;
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    @Test
    void aFewSharedTokensDoNotSpendALongPrefix() {
        PrefixCache cache = new PrefixCache(4);
        Fake conversation = new Fake(100, 0);
        cache.keep(conversation, tokens(0, 100));
        // a request sharing the template's first three tokens only
        assertThat(cache.take(concat(tokens(0, 3), tokens(500, 20)))).isNull();
        assertThat(cache.size()).isEqualTo(1);
        assertThat(conversation.rewinds).isEmpty();
        // the conversation's next turn takes it, rewound to the shared start
        PrefixCache.Hit hit = cache.take(concat(tokens(0, 90), tokens(700, 30)));
        assertThat(hit.sequence()).isSameAs(conversation);
        assertThat(hit.shared()).isEqualTo(90);
        assertThat(cache.size()).isZero();
    }

    @Test
    void theLongestShareWinsAndOneThatCannotRewindIsClosedForTheNext() {
        PrefixCache cache = new PrefixCache(4);
        Fake shorter = new Fake(60, 0);
        Fake longer = new Fake(80, 79);   // cannot go back past position 79
        cache.keep(shorter, tokens(0, 60));
        cache.keep(longer, tokens(0, 80));
        PrefixCache.Hit hit = cache.take(concat(tokens(0, 70), tokens(900, 5)));
        assertThat(longer.closed).isTrue();
        assertThat(hit.sequence()).isSameAs(shorter);
        assertThat(hit.shared()).isEqualTo(60);
    }

    @Test
    void aFullCacheClosesItsOldestAndAPromptKeepsATokenToFeed() {
        PrefixCache cache = new PrefixCache(2);
        Fake a = new Fake(10, 0);
        Fake b = new Fake(10, 0);
        Fake c = new Fake(10, 0);
        cache.keep(a, tokens(0, 10));
        cache.keep(b, tokens(100, 10));
        cache.keep(c, tokens(200, 10));
        assertThat(a.closed).isTrue();
        assertThat(cache.size()).isEqualTo(2);
        // the whole prompt held: all but its last token is taken, which is fed for the next logits
        assertThat(cache.take(tokens(100, 10)).shared()).isEqualTo(9);
        cache.close();
        assertThat(c.closed).isTrue();
    }
}

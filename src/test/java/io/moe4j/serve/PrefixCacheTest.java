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

        /** Forks made of this sequence, at these lengths. */
        final List<Integer> forks = new ArrayList<>();
        boolean forkable;

        @Override
        public StepModel.Sequence fork(int to) {
            if (!forkable) {
                return null;
            }
            forks.add(to);
            return new Fake(to, 0);
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

    /**
     * A request sharing a long start but less than half of a kept sequence (the system prompt and tools of another
     * conversation) gets a copy at the shared start; the kept one stays for the next such request, and for its own
     * conversation's next turn. A model that cannot copy leaves it to a fresh prefill.
     */
    @Test
    void aSharedSystemPromptIsCopiedAndTheKeptSequenceStays() {
        PrefixCache cache = new PrefixCache(4);
        Fake conversation = new Fake(200, 0);
        conversation.forkable = true;
        int[] held = concat(tokens(0, 60), tokens(1000, 140));
        cache.keep(conversation, held);
        for (int client = 0; client < 3; client++) {
            PrefixCache.Hit hit = cache.take(concat(tokens(0, 60), tokens(2000 + 100 * client, 50)));
            assertThat(hit.sequence()).isNotSameAs(conversation);
            assertThat(hit.shared()).isEqualTo(60);
            assertThat(hit.sequence().length()).isEqualTo(60);
            assertThat(hit.copied()).isTrue();
        }
        assertThat(conversation.forks).containsExactly(60, 60, 60);
        assertThat(cache.size()).isEqualTo(1);
        assertThat(conversation.rewinds).isEmpty();
        // fewer than FORK_LEAST shared tokens: not worth a copy
        assertThat(cache.take(concat(tokens(0, PrefixCache.FORK_LEAST - 1), tokens(5000, 50)))).isNull();
        // its own next turn takes it
        PrefixCache.Hit next = cache.take(concat(held, tokens(3000, 10)));
        assertThat(next.sequence()).isSameAs(conversation);
        assertThat(next.shared()).isEqualTo(200);
        assertThat(next.copied()).isFalse();
        // a model that cannot copy: no hit, nothing changed
        Fake plain = new Fake(200, 0);
        cache.keep(plain, held);
        assertThat(cache.take(concat(tokens(0, 60), tokens(4000, 10)))).isNull();
        assertThat(cache.size()).isEqualTo(1);
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

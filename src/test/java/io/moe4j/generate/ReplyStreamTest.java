package io.moe4j.generate;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The per-token path every generated sequence takes: draw, end check, text, held-back text. */
class ReplyStreamTest {
    /** Token i's text is WORDS[i]; id 4 is the end of sequence. */
    private static final String[] WORDS = {"he", "llo", " E", "ND", "<eos>"};
    private static final int EOS = 4;

    private static ReplyStream stream(List<String> stops) {
        return new ReplyStream(SamplingParams.greedy(), null, stops, id -> id == EOS, id -> WORDS[id], () -> "");
    }

    @Test
    void greedyDrawTakesTheLargestLogitWithinTheVocabulary() {
        ReplyStream reply = stream(List.of());
        // The last entry lies past the vocabulary of 4 and must not be drawn.
        assertThat(reply.draw(new float[] {0.1f, 2f, -1f, 0.5f, 9f}, 4, 10)).isEqualTo(1);
    }

    @Test
    void anEndOfSequenceIdEndsTheReplyUnshown() {
        ReplyStream reply = stream(List.of());
        assertThat(reply.take(0)).isEqualTo("he");
        assertThat(reply.ended()).isFalse();
        assertThat(reply.take(EOS)).isEmpty();
        assertThat(reply.ended()).isTrue();
        assertThat(reply.tail()).isEmpty();
    }

    @Test
    void aStopStringAcrossTokensEndsTheReplyAndIsNeverShown() {
        ReplyStream reply = stream(List.of("END"));
        StringBuilder shown = new StringBuilder();
        for (int token : new int[] {0, 1, 2}) {
            shown.append(reply.take(token));
            assertThat(reply.ended()).isFalse();
        }
        // "E" may begin "END", so it waits.
        assertThat(shown.toString()).isEqualTo("hello ");
        assertThat(reply.take(3)).isEmpty();
        assertThat(reply.ended()).isTrue();
        assertThat(reply.tail()).isEmpty();
    }

    @Test
    void specialTokensEndsAreGivenInTheTextThatShowsThem() {
        // ids 0-3 as WORDS; 5 is a special token "<S>", 6 ordinary text spelling the same
        String[] words = {"he", "llo", " E", "ND", "<eos>", "<S>", "<S>"};
        ReplyStream reply = new ReplyStream(SamplingParams.greedy(), null, List.of("<S>!"), id -> id == EOS,
                id -> words[id], () -> "").markSpecialTokens(id -> id == 5);
        // "<S>" may begin the stop string: held back, then shown with the next text, its end at 3 in that text
        assertThat(reply.take(5)).isEmpty();
        assertThat(reply.lastSpecialEnds()).isNull();
        assertThat(reply.take(0)).isEqualTo("<S>he");
        assertThat(reply.lastSpecialEnds()).containsExactly(3);
        // the ordinary spelling is held the same way but has no end; the special one after it waits for the tail
        assertThat(reply.take(6)).isEmpty();
        assertThat(reply.take(5)).isEqualTo("<S>");
        assertThat(reply.lastSpecialEnds()).isNull();
        assertThat(reply.tail()).isEqualTo("<S>");
        assertThat(reply.lastSpecialEnds()).containsExactly(3);
    }

    @Test
    void theTailReleasesWhatTheDetokenizerAndTheStopMatcherHeldBack() {
        ReplyStream reply = new ReplyStream(SamplingParams.greedy(), null, List.of("END"), id -> false,
                id -> WORDS[id], () -> "!");
        assertThat(reply.take(0) + reply.take(2)).isEqualTo("he ");
        // " E" may begin "END": "E" is held back until the end, then shown with the detokenizer's own rest.
        assertThat(reply.tail()).isEqualTo("E!");
    }
}

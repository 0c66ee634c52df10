package io.moe4j.generate;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class StopMatcherTest {

    @Test
    void aStopStringAcrossPiecesIsNeverShown() {
        StopMatcher m = new StopMatcher(List.of("END"));
        StringBuilder shown = new StringBuilder();
        for (String piece : new String[]{"hello E", "N", "D and more"}) {
            shown.append(m.accept(piece));
        }
        assertThat(m.stopped()).isTrue();
        assertThat(m.matched()).isEqualTo("END");
        assertThat(shown.toString()).isEqualTo("hello ");
        assertThat(m.accept("later")).isEmpty();
    }

    @Test
    void aFalseStartIsReleased() {
        StopMatcher m = new StopMatcher(List.of("END", "\n\n"));
        assertThat(m.accept("a E")).isEqualTo("a ");
        assertThat(m.accept("NX")).isEqualTo("ENX");
        assertThat(m.accept("b\n")).isEqualTo("b");
        assertThat(m.flush()).isEqualTo("\n");
        assertThat(m.stopped()).isFalse();
    }

    @Test
    void theEarliestOfSeveralStopsWins() {
        StopMatcher m = new StopMatcher(List.of("bb", "a"));
        assertThat(m.accept("xxabb")).isEqualTo("xx");
        assertThat(m.matched()).isEqualTo("a");
    }

    @Test
    void noStopsPassEverything() {
        StopMatcher m = new StopMatcher(List.of());
        assertThat(m.accept("abc")).isEqualTo("abc");
        assertThat(m.flush()).isEmpty();
    }
}

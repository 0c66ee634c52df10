package io.moe4j.text.tokenizer;

import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Every line of shared/tokenizers/expected.jsonl: the ids of its text, and for "encode" lines the decoded text. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TokenizerConformanceTest {
    private final Map<String, Tokenizer> tokenizers = new HashMap<>();

    private Tokenizer tokenizer(String name) {
        return tokenizers.computeIfAbsent(name, n -> Tokenizer.load(TokenizerFixtures.modelDir(n)));
    }

    static List<TokenizerFixtures.Line> encodeLines() {
        return TokenizerFixtures.lines().stream().filter(l -> l.kind().equals("encode")).toList();
    }

    static List<TokenizerFixtures.Line> chatLines() {
        return TokenizerFixtures.lines().stream().filter(l -> l.kind().equals("chat")).toList();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("encodeLines")
    void encodesAndDecodesLikeTheReference(TokenizerFixtures.Line line) {
        Tokenizer tokenizer = tokenizer(line.tokenizer());
        assertThat(tokenizer.encode(line.text())).as("ids of %s", line).containsExactly(line.ids());
        assertThat(tokenizer.decode(line.ids())).as("decoded %s", line).isEqualTo(line.decoded());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("chatLines")
    void encodesRenderedChatsLikeTheReference(TokenizerFixtures.Line line) {
        Tokenizer tokenizer = tokenizer(line.tokenizer());
        assertThat(tokenizer.encode(line.text())).as("ids of %s", line).containsExactly(line.ids());
        // Special tokens are kept, so a rendered chat decodes back to itself.
        assertThat(tokenizer.decode(line.ids())).as("decoded %s", line).isEqualTo(line.text());
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("encodeLines")
    void streamsTheSameTextAsDecode(TokenizerFixtures.Line line) {
        Tokenizer tokenizer = tokenizer(line.tokenizer());
        IncrementalDecoder decoder = tokenizer.incrementalDecoder();
        StringBuilder streamed = new StringBuilder();
        for (int id : line.ids()) {
            String piece = decoder.next(id);
            assertThat(piece).as("piece of %s", line).doesNotContain("\uFFFD");
            streamed.append(piece);
        }
        assertThat(decoder.hasPending()).isFalse();
        streamed.append(decoder.flush());
        assertThat(streamed.toString()).isEqualTo(line.decoded());
    }
}

package io.moe4j.text.chat.output;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.chat.ChatTemplate;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The splitter picked from each fixture model's real generation prompt. */
class ReplySplitterTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    private static String prompt(String model) throws IOException {
        ChatTemplate t = ChatTemplate.load(Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers", model));
        return t.render(ChatRequest.of((ArrayNode) JSON.readTree("[{\"role\": \"user\", \"content\": \"Hi\"}]"), true)
                .withClock(ChatRequest.fixedDate("2026-01-15")));
    }

    private static String join(List<ReplySplitter.Piece> pieces, ReplySplitter.Kind kind) {
        StringBuilder sb = new StringBuilder();
        pieces.stream().filter(p -> p.kind() == kind).forEach(p -> sb.append(p.text()));
        return sb.toString();
    }

    private static List<ReplySplitter.Piece> run(ReplySplitter s, String reply) {
        List<ReplySplitter.Piece> out = new ArrayList<>();
        for (int i = 0; i < reply.length(); i += 3) {
            out.addAll(s.feed(reply.substring(i, Math.min(reply.length(), i + 3))));
        }
        out.addAll(s.finish());
        return out;
    }

    @Test
    void gptOssPromptGivesHarmony() throws IOException {
        ReplySplitter s = ReplySplitter.forPrompt(prompt("gpt-oss"));
        assertThat(s.isHarmony()).isTrue();
        List<ReplySplitter.Piece> pieces = run(s, "<|channel|>analysis<|message|>Greet.<|end|><|start|>assistant"
                + "<|channel|>commentary<|message|>Preamble.<|end|><|start|>assistant<|channel|>final<|message|>Hello!<|return|>");
        assertThat(join(pieces, ReplySplitter.Kind.REASONING)).isEqualTo("Greet.");
        assertThat(join(pieces, ReplySplitter.Kind.OTHER)).isEqualTo("Preamble.");
        assertThat(join(pieces, ReplySplitter.Kind.ANSWER)).isEqualTo("Hello!");
        assertThat(s.harmonyMessages()).hasSize(3);
    }

    @Test
    void qwenAndDeepSeekPromptsGiveTheThinkSplit() throws IOException {
        for (String model : List.of("qwen3", "deepseek-v3")) {
            ReplySplitter s = ReplySplitter.forPrompt(prompt(model));
            assertThat(s.isHarmony()).isFalse();
            List<ReplySplitter.Piece> pieces = run(s, "<think>\nplan\n</think>\n\nHello!");
            assertThat(join(pieces, ReplySplitter.Kind.REASONING)).isEqualTo("plan");
            assertThat(join(pieces, ReplySplitter.Kind.ANSWER)).isEqualTo("Hello!");
            assertThat(join(run(ReplySplitter.forPrompt(prompt(model)), "Plain."), ReplySplitter.Kind.ANSWER))
                    .isEqualTo("Plain.");
        }
        List<ReplySplitter.Piece> opened = run(ReplySplitter.forPrompt("<｜Assistant｜><think>\n"), "plan\n</think>\n\nok");
        assertThat(join(opened, ReplySplitter.Kind.REASONING)).isEqualTo("plan");
        assertThat(join(opened, ReplySplitter.Kind.ANSWER)).isEqualTo("ok");
    }
}

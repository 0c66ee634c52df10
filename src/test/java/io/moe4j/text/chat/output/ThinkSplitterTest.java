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
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** The think splitter on replies Qwen3's template writes, whole and in pieces of every size. */
class ThinkSplitterTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What the template writes for the assistant's turn after the prompt, up to its end-of-turn token. */
    private static String qwenReply(String reasoning, String content) throws IOException {
        ChatTemplate t = ChatTemplate.load(Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers", "qwen3"));
        ArrayNode head = (ArrayNode) JSON.readTree("[{\"role\": \"user\", \"content\": \"Hi\"}]");
        ArrayNode all = head.deepCopy();
        all.addObject().put("role", "assistant").put("content", content).put("reasoning_content", reasoning);
        String prompt = t.render(ChatRequest.of(head, true));
        String full = t.render(ChatRequest.of(all, false));
        assertThat(full).startsWith(prompt).endsWith("<|im_end|>\n");
        return full.substring(prompt.length(), full.length() - "<|im_end|>\n".length());
    }

    private static ThinkSplitter whole(ThinkSplitter s, String text) {
        s.feed(text);
        s.finish();
        return s;
    }

    @Test
    void aRenderedReplySplitsBackIntoReasoningAndAnswer() throws IOException {
        String reply = qwenReply("The user greets me.\nGreet back.", "Hello!\nHow can I help?");
        assertThat(reply).startsWith("<think>\n");
        ThinkSplitter s = whole(ThinkSplitter.startingOutside(), reply);
        assertThat(s.reasoning()).isEqualTo("The user greets me.\nGreet back.");
        assertThat(s.answer()).isEqualTo("Hello!\nHow can I help?");
    }

    @Test
    void everySplitGivesTheSameTextInOrder() throws IOException {
        String reply = qwenReply("a < b\n\nand </thin not a tag", "x\n\n</think> stays");
        ThinkSplitter ref = whole(ThinkSplitter.startingOutside(), reply);
        assertThat(ref.reasoning()).isEqualTo("a < b\n\nand </thin not a tag");
        assertThat(ref.answer()).isEqualTo("x\n\n</think> stays");
        Random random = new Random(11);
        for (int trial = 0; trial < 300; trial++) {
            ThinkSplitter s = ThinkSplitter.startingOutside();
            List<ThinkSplitter.Piece> pieces = new ArrayList<>();
            int at = 0;
            while (at < reply.length()) {
                int end = Math.min(reply.length(), at + (trial == 0 ? 1 : 1 + random.nextInt(9)));
                pieces.addAll(s.feed(reply.substring(at, end)));
                at = end;
            }
            pieces.addAll(s.finish());
            StringBuilder r = new StringBuilder();
            StringBuilder a = new StringBuilder();
            boolean seenAnswer = false;
            for (ThinkSplitter.Piece p : pieces) {
                assertThat(p.text()).isNotEmpty();
                if (p.reasoning()) {
                    assertThat(seenAnswer).as("reasoning after the answer began").isFalse();
                    r.append(p.text());
                } else {
                    seenAnswer = true;
                    a.append(p.text());
                }
            }
            assertThat(r.toString()).isEqualTo(ref.reasoning());
            assertThat(a.toString()).isEqualTo(ref.answer());
        }
    }

    @Test
    void repliesWithoutThinkingAreAllAnswer() throws IOException {
        // With enable_thinking=false the prompt holds an empty think block and the reply is the answer.
        ChatTemplate t = ChatTemplate.load(Path.of(System.getProperty("moe4j.shared", "../shared"), "tokenizers", "qwen3"));
        String prompt = t.render(ChatRequest.of((ArrayNode) JSON.readTree("[{\"role\": \"user\", \"content\": \"Hi\"}]"), true)
                .withArgument("enable_thinking", JSON.readTree("false")));
        assertThat(prompt).endsWith("<think>\n\n</think>\n\n");
        ThinkSplitter s = whole(ThinkSplitter.startingOutside(), "  Hello <think> there");
        assertThat(s.reasoning()).isEmpty();
        assertThat(s.answer()).isEqualTo("  Hello <think> there");
        assertThat(whole(ThinkSplitter.startingOutside(), "<thi").answer()).isEqualTo("<thi");
    }

    @Test
    void cutOffReasoningAndAPromptThatOpenedIt() {
        ThinkSplitter cut = whole(ThinkSplitter.startingOutside(), "<think>\nstill thinking\n\n");
        assertThat(cut.reasoning()).isEqualTo("still thinking");
        assertThat(cut.answer()).isEmpty();
        ThinkSplitter inside = whole(ThinkSplitter.startingInside(), "\nplan\n</think>\n\nanswer\n");
        assertThat(inside.reasoning()).isEqualTo("plan");
        assertThat(inside.answer()).isEqualTo("answer\n");
    }
}

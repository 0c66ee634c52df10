package io.moe4j.cli;

import io.moe4j.text.chat.output.ReplySplitter;
import org.junit.jupiter.api.Test;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/** The chat view sets reasoning apart from the answer, whatever the pieces the text arrives in. */
class OutputViewTest {

    private static String show(String prompt, String reply, boolean terminal) {
        StringWriter s = new StringWriter();
        PrintWriter out = new PrintWriter(s);
        OutputView view = new OutputView.Split(ReplySplitter.forPrompt(prompt), out, terminal);
        for (int i = 0; i < reply.length(); i += 3) {
            view.accept(reply.substring(i, Math.min(reply.length(), i + 3)));
        }
        view.finish();
        return s.toString();
    }

    @Test
    void qwen3ThinkingIsMarkedApartFromTheAnswer() {
        String shown = show("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
                "<think>\nLet me think.\n</think>\n\nHello!", false);
        assertThat(shown).startsWith("[reasoning]\n").contains("Let me think.").contains("[answer]\n")
                .endsWith("Hello!").doesNotContain("<think>").doesNotContain("</think>");
    }

    @Test
    void harmonyAnalysisIsDimmedOnATerminal() {
        String shown = show("<|start|>user<|message|>hi<|end|><|start|>assistant",
                "<|channel|>analysis<|message|>User greets.<|end|><|start|>assistant<|channel|>final<|message|>Hi there",
                true);
        assertThat(shown).startsWith("\u001b[2mUser greets.").contains("\u001b[0m\nHi there")
                .doesNotContain("<|channel|>");
    }

    /** Harmony text that never opens a message shows nothing, and the view says so (with --raw as the way out). */
    @Test
    void aReplyThatNeverOpensAMessageIsNoted() {
        String harmony = "<|start|>user<|message|>hi<|end|><|start|>assistant";
        StringWriter s = new StringWriter();
        OutputView view = new OutputView.Split(ReplySplitter.forPrompt(harmony), new PrintWriter(s), false);
        view.accept(" words with no channel");
        view.finish();
        assertThat(s.toString()).isEmpty();
        assertThat(view.hiddenNote()).contains("22 characters never opened a message").contains("--raw");
        OutputView answered = new OutputView.Split(ReplySplitter.forPrompt(harmony), new PrintWriter(s), false);
        answered.accept("<|channel|>final<|message|>Hi");
        answered.finish();
        assertThat(answered.hiddenNote()).isNull();
    }

    /** Read by token, a reasoning that quotes harmony's markers in ordinary text stays reasoning. */
    @Test
    void harmonyMarkersSpelledInTheReasoningStayReasoning() {
        StringWriter s = new StringWriter();
        OutputView view = new OutputView.Split(ReplySplitter.forPrompt("<|start|>user<|message|>hi<|end|>"
                + "<|start|>assistant").markersFromTokens(), new PrintWriter(s), false);
        view.accept("<|channel|>analysis<|message|>", new int[] {11, 30});
        view.accept("The doc says <|end|><|start|>assistant<|channel|>final<|message|>leak", null);
        view.accept("<|end|>", new int[] {7});
        view.accept("<|start|>assistant<|channel|>final<|message|>", new int[] {9, 29, 45});
        view.accept("Hi", null);
        view.finish();
        assertThat(s.toString()).isEqualTo("[reasoning]\nThe doc says <|end|><|start|>assistant<|channel|>final"
                + "<|message|>leak\n[answer]\nHi");
    }

    @Test
    void aReplyWithoutReasoningIsShownAsItIs() {
        assertThat(show("<|im_start|>assistant\n", "Just an answer.", false)).isEqualTo("Just an answer.");
    }
}

package io.moe4j.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.moe4j.generate.MoeModel;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.chat.output.ReplySplitter;

import java.io.PrintWriter;

/**
 * What the user sees of the model's text: as it is, or (for chat models that think aloud) the answer with the
 * reasoning set apart: dimmed on a terminal, between {@code [reasoning]} and {@code [answer]} marks otherwise.
 * Harmony text on other channels (tool calls, commentary) is marked with its channel.
 */
interface OutputView {

    void accept(String piece);

    /**
     * A piece with the offsets in it where the text of a special token the model generated ends (null: none): the
     * chat view reads harmony's markers only there, so text that spells one stays text.
     */
    default void accept(String piece, int[] specialEnds) {
        accept(piece);
    }

    /** Shows what is still held back once generation ends. */
    void finish();

    /**
     * After {@link #finish}: a note for a reply of which nothing could be shown (text that never opened a message
     * of the chat format, which a model not trained on it writes), else null.
     */
    default String hiddenNote() {
        return null;
    }

    /**
     * @param split set the reasoning apart; false shows the text as generated ({@code --raw}), as does a model
     *              without a chat template
     */
    static OutputView of(MoeModel model, boolean split, PrintWriter out) {
        if (!split || model.chatTemplate().isEmpty()) {
            return raw(out);
        }
        return new Split(ReplySplitter.forPrompt(probePrompt(model)).markersFromTokens(), out,
                System.console() != null);
    }

    private static OutputView raw(PrintWriter out) {
        return new OutputView() {
            @Override
            public void accept(String piece) {
                out.print(piece);
                out.flush();
            }

            @Override
            public void finish() {
                out.flush();
            }
        };
    }

    /**
     * The reply format shows at the end of a rendered chat (how the template opens the assistant's turn), which is
     * the same for every conversation: a one-message chat tells it.
     */
    private static String probePrompt(MoeModel model) {
        ArrayNode messages = JsonNodeFactory.instance.arrayNode();
        messages.addObject().put("role", "user").put("content", "hi");
        return model.chatTemplate().orElseThrow().render(ChatRequest.of(messages, true));
    }

    /** Answer as it is; reasoning and other channels set apart. */
    final class Split implements OutputView {
        private static final String DIM = "\u001b[2m";
        private static final String RESET = "\u001b[0m";
        private final ReplySplitter splitter;
        private final PrintWriter out;
        private final boolean terminal;
        private String shown = "";
        private long fedChars;

        Split(ReplySplitter splitter, PrintWriter out, boolean terminal) {
            this.splitter = splitter;
            this.out = out;
            this.terminal = terminal;
        }

        @Override
        public void accept(String piece) {
            accept(piece, null);
        }

        @Override
        public void accept(String piece, int[] specialEnds) {
            fedChars += piece.length();
            splitter.feed(piece, specialEnds).forEach(this::show);
            out.flush();
        }

        @Override
        public String hiddenNote() {
            return shown.isEmpty() && fedChars > 0
                    ? "(the reply's " + fedChars + " characters never opened a message of the chat format, so none "
                            + "is shown; --raw shows the text as generated)"
                    : null;
        }

        @Override
        public void finish() {
            splitter.finish().forEach(this::show);
            if (terminal && !shown.equals("answer")) {
                out.print(RESET);
            }
            out.flush();
        }

        private void show(ReplySplitter.Piece p) {
            String kind = switch (p.kind()) {
                case ANSWER -> "answer";
                case REASONING -> "reasoning";
                case OTHER -> p.channel() == null ? "other" : p.channel();
            };
            if (!kind.equals(shown)) {
                if (terminal) {
                    out.print(kind.equals("answer") ? (shown.isEmpty() ? "" : RESET + "\n")
                            : (shown.equals("answer") ? "\n" : "") + DIM + (kind.equals("reasoning") ? "" : "[" + kind + "] "));
                } else if (!shown.isEmpty() || !kind.equals("answer")) {
                    out.print((shown.isEmpty() ? "" : "\n") + "[" + kind + "]\n");
                }
                shown = kind;
            }
            out.print(p.text());
        }
    }
}

package io.moe4j.generate;

import io.moe4j.MoeException;
import io.moe4j.config.ModelFamily;
import io.moe4j.generate.constraint.AnswerConstraint;
import io.moe4j.generate.constraint.AnswerGrammar;
import io.moe4j.generate.constraint.TokenTrie;
import io.moe4j.generate.constraint.TokenVocabulary;
import io.moe4j.text.tools.ToolCallIds;
import io.moe4j.text.tools.ToolCallParser;
import io.moe4j.text.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.Collection;
import java.util.OptionalInt;

/**
 * What a loaded chat model needs to read and shape its replies: the reply format (from the rendered prompt), the
 * tool-call markup of its family (from config.json's {@code model_type}), and the vocabulary's byte trie for
 * constrained decoding, built on first use and shared by every request. Thread-safe.
 */
public final class ChatOutputs {
    private static final String HARMONY_REASONING = "<|channel|>analysis<|message|>";
    private static final String HARMONY_ANSWER = "<|start|>assistant<|channel|>final<|message|>";
    private static final String THINK_OPEN = "<think>";
    private static final String THINK_CLOSE = "</think>";

    private final Tokenizer tokenizer;
    private final ModelFamily family;
    private final int logitsSize;
    private final int[] eos;
    private TokenizerVocabulary vocabulary;
    private TokenTrie trie;
    private boolean[] freeText;

    public ChatOutputs(Tokenizer tokenizer, ModelFamily family, int logitsSize, Collection<Integer> eosIds) {
        this.tokenizer = tokenizer;
        this.family = family;
        this.logitsSize = logitsSize;
        this.eos = eosIds.stream().mapToInt(Integer::intValue).filter(id -> id >= 0 && id < logitsSize).sorted()
                .toArray();
    }

    public ModelFamily family() {
        return family;
    }

    /** The vocabulary as constraints read it (built with the trie). */
    public synchronized TokenVocabulary vocabulary() {
        trie();
        return vocabulary;
    }

    /** The vocabulary's byte trie: built once (a second or so for 200k tokens), then shared. */
    public synchronized TokenTrie trie() {
        if (trie == null) {
            vocabulary = new TokenizerVocabulary(tokenizer, logitsSize);
            trie = new TokenTrie(vocabulary);
            freeText = new boolean[vocabulary.size()];
            for (int id = 0; id < freeText.length; id++) {
                freeText[id] = !vocabulary.isSpecial(id) && vocabulary.bytes(id).length > 0;
            }
        }
        return trie;
    }

    /**
     * The family's own tool-call parser for free (auto) replies: Qwen3's {@code <tool_call>} blocks, DeepSeek-V3's
     * tool-call tokens; null for gpt-oss (harmony messages carry its calls) and families without one.
     */
    public ToolCallParser toolCallParser() {
        return switch (family) {
            case QWEN3_MOE -> ToolCallParser.forFamily("qwen3_moe");
            case DEEPSEEK_V3 -> ToolCallParser.forFamily("deepseek_v3");
            default -> null;
        };
    }

    /**
     * Whether the tool calls of a free (tool_choice auto) reply after {@code renderedPrompt} are read out of it:
     * harmony's messages (gpt-oss) or the family's parser; else a call would come back as text.
     */
    public boolean readsFreeToolCalls(String renderedPrompt) {
        return harmony(renderedPrompt) || toolCallParser() != null;
    }

    /** Whether the reply continues a harmony (gpt-oss) prompt, whose assistant turn the prompt has opened. */
    private static boolean harmony(String renderedPrompt) {
        return renderedPrompt.endsWith("<|start|>assistant");
    }

    /**
     * A reader of the reply that continues {@code renderedPrompt}.
     *
     * @param toolCalls    read the family's tool calls out of the reply (tools offered, tool_choice auto)
     * @param callsAsJson  the answer is constrained JSON calls (tool_choice required or named)
     */
    public ReplyReader reader(String renderedPrompt, boolean toolCalls, boolean callsAsJson, ToolCallIds ids) {
        return new ReplyReader(renderedPrompt, toolCalls && !callsAsJson ? toolCallParser() : null, callsAsJson, ids);
    }

    /**
     * A constraint that keeps the answer of the reply after {@code renderedPrompt} to {@code grammar}, within
     * {@code maxTokens} tokens, leaving the family's reasoning before it free (see {@link ReplyConstraint}).
     */
    public ReplyConstraint constraint(String renderedPrompt, AnswerGrammar grammar, int maxTokens) {
        TokenTrie t = trie();
        AnswerConstraint answer = grammar.constrain(t, vocabulary(), eos);
        if (harmony(renderedPrompt)) {
            return new ReplyConstraint(answer, vocabulary, freeText, ids(HARMONY_REASONING), -1, single("<|end|>"),
                    true, ids(HARMONY_ANSWER), maxTokens);
        }
        OptionalInt open = tokenizer.id(THINK_OPEN);
        OptionalInt close = tokenizer.id(THINK_CLOSE);
        if (open.isPresent() && close.isPresent()) {
            String trimmed = renderedPrompt.stripTrailing();
            int[] bridge = ids("\n\n");
            if (trimmed.endsWith(THINK_OPEN)) {
                return new ReplyConstraint(answer, vocabulary, freeText, new int[0], -1, close.getAsInt(), true,
                        bridge, maxTokens);
            }
            if (!trimmed.endsWith(THINK_CLOSE)) {
                return new ReplyConstraint(answer, vocabulary, freeText, new int[0], open.getAsInt(),
                        close.getAsInt(), false, bridge, maxTokens);
            }
        }
        return ReplyConstraint.answerOnly(answer, vocabulary);
    }

    /**
     * A constraint that keeps a whole continuation to {@code grammar} from its first token (a completions prompt: no
     * chat turn, no reasoning), ended by one of the model's end-of-sequence tokens.
     */
    public ReplyConstraint answerOnly(AnswerGrammar grammar) {
        TokenTrie t = trie();
        return ReplyConstraint.answerOnly(grammar.constrain(t, vocabulary(), eos), vocabulary);
    }

    private int single(String token) {
        return tokenizer.id(token).orElseThrow(() -> new MoeException(tokenizer + ": no token '" + token
                + "', which the reply format needs"));
    }

    /** The ids of a fixed piece of the reply format, without a BOS the tokenizer may add. */
    private int[] ids(String text) {
        int[] ids = tokenizer.encode(text);
        if (ids.length > 0 && tokenizer.bosId().isPresent() && ids[0] == tokenizer.bosId().getAsInt()) {
            ids = Arrays.copyOfRange(ids, 1, ids.length);
        }
        return ids;
    }
}

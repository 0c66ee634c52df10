package io.moe4j.generate;

import io.moe4j.MoeException;
import io.moe4j.generate.constraint.AnswerConstraint;
import io.moe4j.generate.constraint.TokenVocabulary;

import java.util.Arrays;

/**
 * Keeps one chat reply's answer to a grammar (a JSON schema, a regular expression, a list of choices) while leaving
 * the family's reasoning free: the answer's constraint starts where the answer starts. The reply walks through phases:
 * <ol>
 *   <li>forced opening tokens (gpt-oss: {@code <|channel|>analysis<|message|>});</li>
 *   <li>where the reply may open with reasoning (Qwen3 after a prompt outside {@code <think>}): the first token is
 *       either the reasoning opener or a token that starts the answer;</li>
 *   <li>reasoning: any non-special token, until the family's end of reasoning; that end is forced once the
 *       reasoning has used half of the budget the answer does not need, so the answer always gets its turn;</li>
 *   <li>forced tokens between reasoning and answer (gpt-oss: {@code <|start|>assistant<|channel|>final<|message|>},
 *       Qwen3: the blank line after {@code </think>});</li>
 *   <li>the answer (a JSON document, a text the expression matches), then one of its end tokens.</li>
 * </ol>
 * One instance follows one sequence; not thread-safe.
 */
public final class ReplyConstraint {
    private enum Phase { OPEN, CHOOSE, REASON, BRIDGE, ANSWER }

    private final AnswerConstraint answer;
    private final TokenVocabulary vocabulary;
    private final boolean[] freeText;
    private final int[] open;
    private final int reasoningStart;
    private final int reasoningEnd;
    private final int[] bridge;
    private final int reasoningCap;
    private final boolean reasoningOpen;
    private Phase phase;
    private int at;
    private int reasoned;

    /**
     * @param freeText       per id, whether reasoning may use it (the non-special tokens that add text); shared,
     *                       never modified
     * @param open           tokens forced first (may be empty)
     * @param reasoningStart the token that may open reasoning as the first choice (-1: none, or reasoning is already
     *                       open)
     * @param reasoningEnd   the token that ends the reasoning (-1: the reply does not reason)
     * @param reasoningOpen  reasoning runs from the start (after {@code open}) rather than on the model's choice
     * @param bridge         tokens forced after the reasoning end, before the answer
     * @param maxTokens      the reply's token budget
     */
    ReplyConstraint(AnswerConstraint answer, TokenVocabulary vocabulary, boolean[] freeText, int[] open,
                    int reasoningStart, int reasoningEnd, boolean reasoningOpen, int[] bridge, int maxTokens) {
        this.answer = answer;
        this.vocabulary = vocabulary;
        this.freeText = freeText;
        this.open = open.clone();
        this.reasoningStart = reasoningStart;
        this.reasoningEnd = reasoningEnd;
        this.bridge = bridge.clone();
        int answerNeeds = answer.minTokens() + bridge.length + 1;
        this.reasoningCap = Math.max(0, (maxTokens - this.open.length - answerNeeds) / 2);
        if (reasoningEnd < 0) {
            phase = this.open.length > 0 ? Phase.OPEN : Phase.ANSWER;
        } else if (this.open.length > 0) {
            phase = Phase.OPEN;
        } else {
            phase = reasoningOpen ? Phase.REASON : reasoningStart >= 0 ? Phase.CHOOSE : Phase.ANSWER;
        }
        this.reasoningOpen = reasoningOpen;
    }

    /**
     * A reply that is the answer alone, from its first token: no forced tokens, no reasoning (a model family
     * without either, or a text that is not a chat).
     */
    public static ReplyConstraint answerOnly(AnswerConstraint answer, TokenVocabulary vocabulary) {
        // Without reasoning, neither the free-text ids nor the budget (which only caps reasoning) are read.
        return new ReplyConstraint(answer, vocabulary, new boolean[0], new int[0], -1, -1, false, new int[0], 0);
    }

    /** The fewest tokens the reply needs: the forced tokens, an immediately ended reasoning, the shortest answer. */
    public int minTokens() {
        int reasoning = reasoningEnd >= 0 && reasoningOpen ? 1 + bridge.length : 0;
        return open.length + reasoning + answer.minTokens();
    }

    /** The length a mask for {@link #fillAllowed} needs at least. */
    public int maskSize() {
        return vocabulary.size();
    }

    /** Whether the token budget cut the answer short ({@link AnswerConstraint#cutByBudget}). */
    public boolean cutByBudget() {
        return answer.cutByBudget();
    }

    /** Whether the reply is inside the answer (not in forced tokens or reasoning). */
    public boolean inAnswer() {
        return phase == Phase.ANSWER;
    }

    /**
     * Sets {@code mask[id]} for every token allowed next when {@code remaining} tokens, this one included, may still
     * be produced. The mask must have at least the vocabulary's size.
     */
    public void fillAllowed(boolean[] mask, int remaining) {
        switch (phase) {
            case OPEN -> only(mask, open[at]);
            case BRIDGE -> only(mask, bridge[at]);
            case ANSWER -> answer.fillAllowed(mask, remaining);
            case CHOOSE -> {
                answer.fillAllowed(mask, remaining);
                // Reasoning first only while the answer still fits after it.
                if (remaining > answer.minTokens() + bridge.length + 2) {
                    mask[reasoningStart] = true;
                }
            }
            case REASON -> {
                if (reasoned >= reasoningCap || remaining <= answer.minTokens() + bridge.length + 1) {
                    only(mask, reasoningEnd);
                } else {
                    System.arraycopy(freeText, 0, mask, 0, freeText.length);
                    Arrays.fill(mask, freeText.length, mask.length, false);
                    mask[reasoningEnd] = true;
                }
            }
        }
    }

    /** Advances past the token drawn; fails on a token the last mask did not allow. */
    public void accept(int id) {
        switch (phase) {
            case OPEN -> {
                expect(id, open[at]);
                if (++at == open.length) {
                    at = 0;
                    phase = reasoningEnd < 0 ? Phase.ANSWER
                            : reasoningOpen ? Phase.REASON : reasoningStart >= 0 ? Phase.CHOOSE : Phase.ANSWER;
                }
            }
            case CHOOSE -> {
                if (id == reasoningStart) {
                    phase = Phase.REASON;
                } else {
                    phase = Phase.ANSWER;
                    answer.accept(id);
                }
            }
            case REASON -> {
                if (id == reasoningEnd) {
                    phase = bridge.length > 0 ? Phase.BRIDGE : Phase.ANSWER;
                    at = 0;
                } else {
                    reasoned++;
                }
            }
            case BRIDGE -> {
                expect(id, bridge[at]);
                if (++at == bridge.length) {
                    phase = Phase.ANSWER;
                }
            }
            case ANSWER -> answer.accept(id);
        }
    }

    private static void expect(int id, int wanted) {
        if (id != wanted) {
            throw new MoeException("token " + id + " where the reply's format requires token " + wanted);
        }
    }

    private static void only(boolean[] mask, int id) {
        Arrays.fill(mask, false);
        mask[id] = true;
    }
}

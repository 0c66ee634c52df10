package io.moe4j.generate;

import io.moe4j.MoeException;

import io.moe4j.model.Session;
import io.moe4j.text.tokenizer.IncrementalDecoder;
import io.moe4j.text.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * Runs one sequence: the prompt in one pass through the session's KV cache, then one token at a time, each drawn,
 * ended on and turned into text by a {@link ReplyStream} (incomplete UTF-8 and what may start a stop string held
 * back). The session keeps every token fed, so a chat can continue from where it ended.
 */
public final class Generator {
    private final Tokenizer tokenizer;

    public Generator(Tokenizer tokenizer) {
        this.tokenizer = tokenizer;
    }

    /**
     * Feeds {@code prompt} to the session and generates after it.
     *
     * @param onText    receives each new piece of text as soon as it is safe to show
     * @param cancelled polled before every token; when true the generation ends with {@link FinishReason#CANCELLED}
     */
    public GenerationResult generate(Session session, int[] prompt, GenerationRequest request, Consumer<String> onText,
                                     BooleanSupplier cancelled) {
        return generate(session, prompt, request, onText, cancelled, null);
    }

    /**
     * As {@link #generate(Session, int[], GenerationRequest, Consumer, BooleanSupplier)}, each token drawn among
     * those {@code constraint} allows (null: all); a constrained reply ignores stop strings, which would cut its
     * JSON short.
     */
    public GenerationResult generate(Session session, int[] prompt, GenerationRequest request, Consumer<String> onText,
                                     BooleanSupplier cancelled, ReplyConstraint constraint) {
        return generate(session, prompt, request, (text, ends) -> onText.accept(text), cancelled, constraint, prompt);
    }

    /**
     * As above, each piece of text given with the offsets in it where a special token's text ends, for a
     * {@link ReplyReader} that reads markers from tokens ({@link ReplyReader#markersFromTokens()}).
     */
    public GenerationResult generate(Session session, int[] prompt, GenerationRequest request, ReplySink onText,
                                     BooleanSupplier cancelled, ReplyConstraint constraint) {
        return generate(session, prompt, request, onText, cancelled, constraint, prompt);
    }

    /** Text as it becomes safe to show, with where in it the texts of special tokens end (null: none). */
    @FunctionalInterface
    public interface ReplySink {
        void accept(String text, int[] specialEnds);
    }

    /**
     * As above, where the session already holds part of the sequence: {@code wholePrompt} is all of it before the
     * reply (what the repetition penalty counts), {@code prompt} its tail still to feed.
     */
    GenerationResult generate(Session session, int[] prompt, GenerationRequest request, ReplySink onText,
                              BooleanSupplier cancelled, ReplyConstraint constraint, int[] wholePrompt) {
        // The session holds contextLimit positions; the token drawn when they are all filled needs none (it is never
        // fed), so the sequence may hold one token more.
        ReplyBudget budget = new ReplyBudget(request.maxTokens(), (long) session.contextLimit() + 1);
        long afterPrompt = session.position() + (long) prompt.length;
        // A prompt that overflows the context (no room at all) is refused by the session, naming its limit.
        if (constraint != null && budget.contextRoom(afterPrompt) > 0
                && constraint.minTokens() > budget.room(0, afterPrompt)) {
            throw new MoeException("the constrained reply needs at least " + constraint.minTokens()
                    + " tokens; max tokens is " + request.maxTokens() + " and the context leaves "
                    + budget.contextRoom(afterPrompt) + " after the prompt");
        }
        IncrementalDecoder decoder = tokenizer.incrementalDecoder(false);
        ReplyStream reply = new ReplyStream(request.sampling(), constraint,
                constraint == null ? request.stop() : List.of(), request.eosIds()::contains, decoder::next,
                decoder::flush, wholePrompt).markSpecialTokens(tokenizer::isSpecial);
        StringBuilder text = new StringBuilder();
        int[] made = new int[Math.min(request.maxTokens(), 1 << 16)];
        int count = 0;
        long start = System.nanoTime();
        float[] logits = session.prefillLast(prompt);
        // unconstrained: the model draws the next token where its logits are (one id back from a device)
        boolean drawInModel = reply.drawsInModel();
        int chosen = -1; // the token the model drew at the last step, when drawInModel
        long firstToken = 0;
        FinishReason reason = FinishReason.LENGTH;
        int vocab = logits.length;
        while (count < request.maxTokens()) {
            if (cancelled.getAsBoolean()) {
                reason = FinishReason.CANCELLED;
                break;
            }
            int token = chosen >= 0 ? chosen : drawn(reply, logits, vocab, budget.room(count, session.position()),
                    session.position());
            if (count == made.length) {
                made = Arrays.copyOf(made, made.length * 2);
            }
            made[count++] = token;
            if (count == 1) {
                firstToken = System.nanoTime();
            }
            emit(reply.take(token), reply.lastSpecialEnds(), text, onText);
            if (reply.ended()) {
                // JSON the budget closed early is complete but cut short: a length, as an unconstrained reply's
                reason = constraint != null && constraint.cutByBudget() ? FinishReason.LENGTH : FinishReason.STOP;
                break;
            }
            // The token just drawn is not fed yet: the sequence holds one more than the session's position.
            if (budget.spent(count, session.position() + 1L)) {
                break;
            }
            if (drawInModel) {
                chosen = session.decodeDrawn(token, reply.nextDraw());
            } else {
                logits = session.decode(token);
            }
        }
        emit(reply.tail(), reply.lastSpecialEnds(), text, onText);
        long end = System.nanoTime();
        long prefill = (firstToken == 0 ? end : firstToken) - start;
        long decode = firstToken == 0 ? 0 : end - firstToken;
        return new GenerationResult(prompt.length, Arrays.copyOf(made, count), text.toString(), reason,
                prefill, decode);
    }

    /** reply.draw, its failure (no finite logit to draw from: NaN output) named for the user. */
    private static int drawn(ReplyStream reply, float[] logits, int vocab, int room, long position) {
        try {
            return reply.draw(logits, vocab, room);
        } catch (IllegalStateException e) {
            throw new MoeException("no token to draw: every logit after position " + (position - 1)
                    + " is NaN or -infinity" + (reply.drawsInModel() ? "" : " among the tokens the constraint allows"));
        }
    }

    private static void emit(String piece, int[] specialEnds, StringBuilder text, ReplySink onText) {
        if (!piece.isEmpty()) {
            text.append(piece);
            onText.accept(piece, specialEnds);
        }
    }
}

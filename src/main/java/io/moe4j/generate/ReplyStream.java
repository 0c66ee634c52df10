package io.moe4j.generate;

import io.moe4j.model.TokenDraw;

import java.util.List;
import java.util.function.IntFunction;
import java.util.function.IntPredicate;
import java.util.function.Supplier;

/**
 * What happens to one sequence's reply after each model step: the next token is drawn (after the sampling's
 * {@link LogitAdjustments}, among those a constraint allows, when there is one, and the constraint follows it), an
 * end-of-sequence id ends the reply unseen, any other token becomes text (incomplete characters held back by the
 * detokenizer) and text that may begin a stop string is held back until it is known not to be one. {@link Generator} and the server's scheduler both run their sequences
 * through it, so a reply draws, ends and reads the same whichever of them produces it, and both reckon its room (token
 * budget and context) with a {@link ReplyBudget}; they keep only what differs (how logits are made, where text goes).
 * One per sequence; not thread-safe.
 */
public final class ReplyStream {
    private final Sampler sampler;
    private final ReplyConstraint constraint;
    private final StopMatcher stops;
    private final IntPredicate eos;
    private final IntFunction<String> detokenize;
    private final Supplier<String> flushText;
    private final LogitAdjustments.Adjuster adjuster;
    private ReplyOptions options = ReplyOptions.NONE;
    private TokenLogprobs lastLogprobs;
    /** The ids an end-of-sequence or stop token, found once a reply with min tokens needs to hold them back. */
    private int[] endIds;
    private int taken;
    private boolean endedByToken;
    private boolean[] mask;
    private boolean ended;
    /** Ids whose text is the model's markup (special tokens), when the reply's reader asks where they are. */
    private IntPredicate special;
    /** Characters the detokenizer has given, and characters shown (returned by take and tail) so far. */
    private long producedChars;
    private long shownChars;
    /** Where in the detokenized text a special token's text ends, for those not shown yet. */
    private final java.util.ArrayDeque<Long> specialEnds = new java.util.ArrayDeque<>();
    private int[] lastSpecialEnds;

    /**
     * @param constraint (null: free output) narrows every draw
     * @param stops      stop strings; they end the reply and are never shown
     * @param eos        whether an id ends the sequence (it is never shown)
     * @param detokenize the text one more id completes, from the sequence's incremental detokenizer
     * @param flushText  what that detokenizer still holds back when the sequence ends
     */
    public ReplyStream(SamplingParams sampling, ReplyConstraint constraint, List<String> stops, IntPredicate eos,
                       IntFunction<String> detokenize, Supplier<String> flushText) {
        this(sampling, constraint, stops, eos, detokenize, flushText, new int[0]);
    }

    /**
     * @param prompt the sequence's tokens before the reply, which the repetition penalty counts (the other
     *               adjustments read only the reply)
     */
    public ReplyStream(SamplingParams sampling, ReplyConstraint constraint, List<String> stops, IntPredicate eos,
                       IntFunction<String> detokenize, Supplier<String> flushText, int[] prompt) {
        this.sampler = new Sampler(sampling);
        this.adjuster = sampling.adjustments().isNone() ? null
                : new LogitAdjustments.Adjuster(sampling.adjustments(), prompt);
        this.constraint = constraint;
        this.stops = new StopMatcher(stops);
        this.eos = eos;
        this.detokenize = detokenize;
        this.flushText = flushText;
    }

    /**
     * Draws the next token from {@code logits[0, vocab)}.
     *
     * @param remaining how many tokens the reply may still produce, this one included ({@link ReplyBudget#room}:
     *                  the token budget and the context); only a constraint reads it (so that it can close its
     *                  document in time)
     */
    public int draw(float[] logits, int vocab, int remaining) {
        TokenLogprobs.Distribution raw = null;
        float[] rawLogits = logits;
        boolean holdEnds = taken < options.minTokens();
        if (options.logprobs() >= 0) {
            // the model's own distribution, before the adjustments change the logits in place
            raw = TokenLogprobs.Distribution.of(logits, vocab, options.logprobs());
            if (adjuster != null || holdEnds) {
                rawLogits = logits.clone();
            }
        }
        if (adjuster != null) {
            adjuster.apply(logits, vocab);
        }
        if (holdEnds) {
            for (int id : endIds(vocab)) {
                logits[id] = Float.NEGATIVE_INFINITY;
            }
        }
        int token;
        if (constraint == null) {
            token = sampler.sample(logits, 0, vocab);
        } else {
            if (mask == null) {
                mask = new boolean[Math.max(vocab, constraint.maskSize())];
            }
            constraint.fillAllowed(mask, remaining);
            token = sampler.sample(logits, 0, vocab, mask);
            constraint.accept(token);
        }
        if (raw != null) {
            lastLogprobs = raw.of(token, rawLogits[token]);
        }
        return token;
    }

    /**
     * What the reply keeps and when it may end ({@link ReplyOptions}), set before its first draw: with log-probabilities
     * or min tokens it draws on the host, where its logits are.
     */
    public void configure(ReplyOptions replyOptions) {
        this.options = replyOptions;
    }

    private int[] endIds(int vocab) {
        if (endIds == null) {
            endIds = java.util.stream.IntStream.range(0, vocab)
                    .filter(id -> (!options.ignoreEos() && eos.test(id)) || options.isStopToken(id)).toArray();
        }
        return endIds;
    }

    /**
     * Keeps track of where the text of tokens that {@code special} accepts ends, so that a reader can tell a marker the
     * model generated as a special token from the same characters spelled by ordinary tokens
     * ({@link #lastSpecialEnds()}, {@link ReplyReader#markersFromTokens()}).
     */
    public ReplyStream markSpecialTokens(IntPredicate special) {
        this.special = special;
        return this;
    }

    /**
     * The offsets in the text the last {@link #take} or {@link #tail} returned where the text of a special token ends
     * (in order; null when none, or when {@link #markSpecialTokens} was not asked).
     */
    public int[] lastSpecialEnds() {
        return lastSpecialEnds;
    }

    /** Returns {@code text} after noting which special tokens' ends it shows. */
    private String showing(String text) {
        long to = shownChars + text.length();
        int[] ends = null;   // most texts show no special token: nothing allocated for them
        while (!specialEnds.isEmpty() && specialEnds.peekFirst() <= to) {
            ends = ends == null ? new int[1] : java.util.Arrays.copyOf(ends, ends.length + 1);
            ends[ends.length - 1] = (int) (specialEnds.removeFirst() - shownChars);
        }
        lastSpecialEnds = ends;
        shownChars = to;
        return text;
    }

    /** The last draw's log-probabilities, when the {@link ReplyOptions} ask for them (else null). */
    public TokenLogprobs lastLogprobs() {
        return lastLogprobs;
    }

    /**
     * Whether the model may draw the next token itself where its logits are (no constraint): then {@link #nextDraw}
     * gives the draw ({@code Session.decodeDrawn}) and the token goes to {@link #take} without any logits crossing to
     * the host, exactly as {@link #draw} would have drawn it from them.
     */
    public boolean drawsInModel() {
        return constraint == null && adjuster == null && options.logprobs() < 0 && options.minTokens() == 0;
    }

    /** The next draw's rule and random number, for a model that draws itself ({@link #drawsInModel}). */
    public TokenDraw nextDraw() {
        if (!drawsInModel()) {
            throw new IllegalStateException("a constrained or adjusted reply, or one that keeps log-probabilities, "
                    + "draws from its logits on the host");
        }
        return sampler.nextDraw();
    }

    /**
     * Takes a drawn token; returns the text it makes safe to show (possibly empty). Afterwards {@link #ended()} says
     * whether the token ended the reply: an end-of-sequence id (nothing shown) or a completed stop string (the text
     * before it shown, the stop string not).
     */
    public String take(int token) {
        if (adjuster != null) {
            adjuster.accept(token);
        }
        taken++;
        if ((!options.ignoreEos() && eos.test(token)) || options.isStopToken(token)) {
            ended = true;
            endedByToken = true;
            return showing("");
        }
        String text = detokenize.apply(token);
        producedChars += text.length();
        if (special != null && !text.isEmpty() && special.test(token)) {
            specialEnds.addLast(producedChars);
        }
        if (taken <= options.minTokens()) {
            // before min tokens no stop string ends the reply (as vLLM checks none there)
            return showing(text);
        }
        String visible = stops.accept(text);
        ended = stops.stopped();
        return showing(visible);
    }

    /** Whether the reply ended at the last token taken because of that token (an end-of-sequence or stop id). */
    public boolean endedByToken() {
        return endedByToken;
    }

    /** Whether the last token taken ended the reply (end-of-sequence id or stop string). */
    public boolean ended() {
        return ended;
    }

    /**
     * Ends the sequence's text: what the detokenizer and the stop matcher still hold back, to show after the last
     * piece; empty once a stop string has matched (text after a stop string is never shown). Call once, at the end.
     */
    public String tail() {
        return showing(stops.accept(flushText.get()) + stops.flush());
    }
}

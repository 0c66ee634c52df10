package io.moe4j.model;

import io.moe4j.MoeException;

import java.util.Arrays;

/**
 * One sequence through a {@link Model}: the KV cache of every layer and the number of positions fed so far.
 * Tokens go in as a prompt in one pass ({@link #prefill}) or one at a time ({@link #decode}); the logits are the
 * same either way. Not thread-safe: one session serves one sequence at a time.
 */
public final class Session implements AutoCloseable {
    /** The longest float[] the JVM allocates. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    private final Model model;
    private final KvBuffer[] caches;
    private long position;
    /** Why the last forward failed part-way, leaving the caches inconsistent; null when the session is usable. */
    private String failure;

    Session(Model model) {
        this.model = model;
        this.caches = new KvBuffer[model.layers().size()];
        for (int l = 0; l < caches.length; l++) {
            caches[l] = model.layers().get(l).attention().newCache();
        }
    }

    /** How many positions this session has consumed (the next token's position). */
    public long position() {
        return position;
    }

    /** The most positions this session can hold (the model's context limit). */
    public int contextLimit() {
        return model.contextLimit();
    }

    /**
     * How many positions layer {@code layer} holds in its cache: all of them for full attention, at most the window
     * or the current chunk for sliding and chunked layers.
     */
    public int cachedPositions(int layer) {
        return caches[layer].rows();
    }

    /** Feeds the tokens in one pass and returns the logits of every one of them, [tokens.length, vocab]. */
    public float[] prefill(int[] tokens) {
        return forward(tokens, true);
    }

    /** Feeds the tokens in one pass and returns only the last one's logits [vocab] (what generation needs). */
    public float[] prefillLast(int[] tokens) {
        return forward(tokens, false);
    }

    /** Feeds one token and returns its logits [vocab]. */
    public float[] decode(int token) {
        return forward(new int[] {token}, false);
    }

    /**
     * Feeds tokens at positions position() .. position()+n-1. Fails, leaving the session as it was, when they would
     * run past the context limit or hold an id outside the vocabulary; a failure inside a layer leaves the caches
     * part-updated, so the session then refuses work until {@link #reset()}.
     *
     * @param allLogits every position's logits [n, vocab], or only the last one's [vocab]
     */
    public float[] forward(int[] tokens, boolean allLogits) {
        int n = tokens.length;
        if (n == 0) {
            throw new IllegalArgumentException("no tokens to feed");
        }
        checkFeed(n, allLogits ? n : 1);
        float[] h = model.embed(tokens);
        int hidden = model.config().hidden();
        int layer = 0;
        try {
            for (; layer < caches.length; layer++) {
                model.layers().get(layer).forward(h, n, hidden, position, caches[layer]);
            }
        } catch (RuntimeException e) {
            failure = "layer " + layer + ": " + e.getMessage();
            throw e;
        }
        position += n;
        if (allLogits) {
            return model.logits(h, n);
        }
        return model.logits(Arrays.copyOfRange(h, (n - 1) * hidden, n * hidden), 1);
    }

    /**
     * Fails, changing nothing, unless {@code n} more tokens fit in the context, the hidden states and
     * {@code logitRows} rows of logits fit in Java arrays, and the session has not failed part-way.
     */
    void checkFeed(int n, int logitRows) {
        if (position + n > model.contextLimit()) {
            throw new MoeException("context overflow: " + position + " positions held + " + n + " new tokens exceed the"
                    + " context limit of " + model.contextLimit() + " (max_position_embeddings "
                    + model.config().maxPositions() + ")");
        }
        long hiddenValues = (long) n * model.config().hidden();
        long logitValues = (long) logitRows * model.vocabSize();
        if (Math.max(hiddenValues, logitValues) > MAX_ARRAY) {
            throw new MoeException(n + " tokens in one call need " + Math.max(hiddenValues, logitValues)
                    + " floats in one array, more than Java holds: feed them in smaller pieces"
                    + (logitRows > 1 ? " or ask for the last logits only" : ""));
        }
        if (failure != null) {
            throw new IllegalStateException("the session failed part-way (" + failure + "); reset() it to start again");
        }
    }

    Model model() {
        return model;
    }

    KvBuffer cache(int layer) {
        return caches[layer];
    }

    void advance(int n) {
        position += n;
    }

    /** Marks the caches inconsistent after a failure inside a layer: the session refuses work until reset. */
    void fail(String why) {
        failure = why;
    }

    /** Empties the cache: the next token is at position 0 again. */
    public void reset() {
        for (KvBuffer c : caches) {
            c.clear();
        }
        position = 0;
        failure = null;
    }

    /**
     * Goes back to {@code position}: the tokens fed at it and after are forgotten, so a conversation can continue
     * from a shared prefix without running it again. Possible only while every layer still holds all the rows
     * before {@code position} (a sliding or chunked layer may have dropped some); returns false, changing nothing,
     * when it is not.
     */
    public boolean rewind(long position) {
        if (position < 0 || position > this.position) {
            throw new IllegalArgumentException("cannot rewind to " + position + " (at " + this.position + ")");
        }
        for (KvBuffer c : caches) {
            if (c.first() > 0) {
                return false;
            }
        }
        for (KvBuffer c : caches) {
            c.truncate(position);
        }
        this.position = position;
        return true;
    }

    @Override
    public void close() {
        reset();
    }
}

package io.moe4j.model;

import io.moe4j.MoeException;

/**
 * One sequence through a {@link Model}: its state in the model's runtime (the KV cache of every layer, on the host
 * or on the device) and the number of positions fed so far. Tokens go in as a prompt ({@link #prefill}: one pass
 * of the runtime, or passes of {@code moe4j.passTokens} for a longer one) or one at a time ({@link #decode}); the
 * logits are the same either way. Not thread-safe: one session serves one sequence at a time.
 */
public final class Session implements AutoCloseable {
    /** The longest float[] the JVM allocates. */
    private static final long MAX_ARRAY = Integer.MAX_VALUE - 8;

    private final Model model;
    private final SequenceState state;
    private long position;
    /** Why the last forward failed part-way, leaving the caches inconsistent; null when the session is usable. */
    private String failure;
    private boolean closed;
    /**
     * The most tokens one pass of the runtime takes: a longer prompt runs as passes of this many, one after another
     * through the cache, so that the activations and the experts' buffers of a pass stay bounded whatever the
     * prompt's length (on an H200, a 32k-token gpt-oss-20b prompt in one pass ran out of memory). {@code
     * -Dmoe4j.passTokens}, read as a session starts.
     */
    private final int passTokens;

    /** {@link #passTokens} unless set: the prefill GEMMs are well fed long before (~500 pairs an expert for gpt-oss). */
    static final int PASS_TOKENS = 4096;

    Session(Model model, SequenceState state) {
        this.model = model;
        this.state = state;
        this.passTokens = Integer.getInteger("moe4j.passTokens", PASS_TOKENS);
        if (passTokens < 1) {
            state.close();
            throw new IllegalArgumentException("moe4j.passTokens must be at least 1, got " + passTokens);
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
     * or the current chunk for sliding and chunked layers (host sessions; a device session keeps every position).
     */
    public int cachedPositions(int layer) {
        return state instanceof HostSequence host ? host.cache(layer).rows() : (int) position;
    }

    /** Feeds the tokens as a prompt and returns the logits of every one of them, [tokens.length, vocab]. */
    public float[] prefill(int[] tokens) {
        return forward(tokens, true);
    }

    /** Feeds the tokens as a prompt and returns only the last one's logits [vocab] (what generation needs). */
    public float[] prefillLast(int[] tokens) {
        return forward(tokens, false);
    }

    /** Feeds one token and returns its logits [vocab]. */
    public float[] decode(int token) {
        return forward(new int[] {token}, false);
    }

    /**
     * Feeds one token and returns the greedy choice of the next: the index of its largest logit, the lowest on ties
     * ({@link Logits#argmax}), the same id as the argmax of {@link #decode}'s logits; fails, naming the position,
     * where that logit is NaN or -infinity. A model on a device chooses it there and sends back one id instead of
     * the vocabulary's logits.
     */
    public int decodeGreedy(int token) {
        return decodeDrawn(token, TokenDraw.greedy());
    }

    /**
     * Feeds one token and returns the next drawn by {@code draw} ({@link TokenDraw}'s rule) from its logits: a model
     * on a device draws there and sends back one id instead of the vocabulary's logits. The token is fed either way;
     * a draw with no finite logit to draw from then fails, naming that.
     */
    public int decodeDrawn(int token, TokenDraw draw) {
        int[] tokens = {token};
        checkFeed(tokens, 1);
        int next;
        try {
            next = state.forwardDrawn(tokens, position, draw);
        } catch (RuntimeException e) {
            failure = e.getMessage();
            throw e;
        }
        position += 1;
        if (next < 0) {
            throw new MoeException("no token to draw: every logit after position " + (position - 1)
                    + " is NaN or -infinity");
        }
        return next;
    }

    /**
     * Feeds tokens at positions position() .. position()+n-1, in one pass of the runtime or, beyond
     * {@code moe4j.passTokens} (4096), in passes of that many. Fails, leaving the session as it was, when they would
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
        checkFeed(tokens, allLogits ? n : 1);
        float[] logits = null;
        float[] all = null;
        try {
            for (int from = 0; from < n; from += passTokens) {
                int len = Math.min(passTokens, n - from);
                int[] pass = len == n ? tokens : java.util.Arrays.copyOfRange(tokens, from, from + len);
                logits = state.forward(pass, position + from, allLogits);
                if (allLogits && len < n) {
                    int row = logits.length / len;
                    if (all == null) {
                        all = new float[Math.multiplyExact(n, row)];
                    }
                    System.arraycopy(logits, 0, all, from * row, len * row);
                }
            }
        } catch (RuntimeException e) {
            failure = e.getMessage();
            throw e;
        }
        position += n;
        return all != null ? all : logits;
    }

    /**
     * Fails, changing nothing, unless the tokens fit in the context, are ids of the vocabulary, their hidden states
     * and {@code logitRows} rows of logits fit in Java arrays, and the session has not failed part-way.
     */
    void checkFeed(int[] tokens, int logitRows) {
        checkOpen();
        int n = tokens.length;
        if (position + n > model.contextLimit()) {
            throw new MoeException("context overflow: " + position + " positions held + " + n + " new tokens exceed the"
                    + " context limit of " + model.contextLimit() + " (max_position_embeddings "
                    + model.config().maxPositions() + ")");
        }
        int vocab = model.config().vocab();
        for (int t = 0; t < n; t++) {
            if (tokens[t] < 0 || tokens[t] >= vocab) {
                throw new MoeException("token id " + tokens[t] + " at index " + t + " is outside the vocabulary [0, "
                        + vocab + ")");
            }
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

    /** This session's state in the model's runtime. */
    SequenceState state() {
        return state;
    }

    /** The host caches of this session, or null when it lives on a device. */
    HostSequence host() {
        return state instanceof HostSequence h ? h : null;
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
        checkOpen();
        state.reset();
        position = 0;
        failure = null;
    }

    /**
     * Goes back to {@code position}: the tokens fed at it and after are forgotten, so a conversation can continue
     * from a shared prefix without running it again. Possible only while every layer still holds all the rows
     * before {@code position} (a sliding or chunked host layer may have dropped some); returns false, changing
     * nothing, when it is not.
     */
    public boolean rewind(long position) {
        checkOpen();
        if (position < 0 || position > this.position) {
            throw new IllegalArgumentException("cannot rewind to " + position + " (at " + this.position + ")");
        }
        if (failure != null || !state.rewind(position)) {
            return false;
        }
        this.position = position;
        return true;
    }

    /**
     * A new session holding this one's first {@code position} tokens, its caches copied (a shared prefix is copied, not
     * run again); the two then go on apart. Null where the runtime cannot copy them or, as for {@link #rewind}, a
     * sliding or chunked host layer no longer holds every row the copy's next query sees.
     */
    public Session fork(long position) {
        checkOpen();
        if (position < 0 || position > this.position) {
            throw new IllegalArgumentException("cannot fork at " + position + " (at " + this.position + ")");
        }
        if (failure != null) {
            return null;
        }
        SequenceState copy = state.fork(position);
        if (copy == null) {
            return null;
        }
        Session s = new Session(model, copy);
        s.position = position;
        return s;
    }

    /**
     * Keeps, from now on, what a {@link #rewind} of up to {@code positions} positions needs: a sliding or chunked
     * host layer then holds that many rows beyond its window (a conversation rewinds past its last reply where the
     * chat template renders that reply anew).
     */
    public void keepForRewind(int positions) {
        checkOpen();
        state.keepForRewind(positions);
    }

    /** Frees the session's caches; a closed session refuses further work. Closing twice does nothing more. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            state.close();
            position = 0;
        }
    }

    /** The caches a closed session held are freed (on a device, perhaps reused): nothing may touch them again. */
    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("the session is closed; open a new one with Model.newSession()");
        }
    }
}

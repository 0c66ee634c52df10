package io.moe4j.model;

/** The attention block of one decoder layer; its state between calls lives in the caller's {@link KvBuffer}. */
public interface Attention extends AutoCloseable {

    /** An empty cache for one sequence. */
    KvBuffer newCache();

    /** The positions a query sees ({@link AttentionWindow}); its cache drops the rows none can see any more. */
    default AttentionWindow window() {
        return AttentionWindow.FULL;
    }

    /**
     * Attends the {@code tokens} rows of x [tokens, hidden] at positions start .. start+tokens-1 to themselves and to
     * what {@code cache} holds of the earlier positions; appends the new rows to the cache, drops the rows no later
     * query can see, and returns the output projection [tokens, hidden].
     */
    float[] forward(float[] x, int tokens, long start, KvBuffer cache);

    /**
     * The rows of several sequences in one call (continuous batching): segment i holds rows [row, row + tokens) of
     * x [tokens, hidden] at its own positions and cache. Returns the output projection of every row. By default each
     * segment runs on its own; an implementation that can share the projections' weight reads across segments
     * overrides it.
     */
    default float[] forward(float[] x, int tokens, java.util.List<Segment> segments) {
        if (segments.size() == 1 && segments.get(0).row() == 0 && segments.get(0).tokens() == tokens) {
            Segment s = segments.get(0);
            return forward(x, tokens, s.start(), s.cache());
        }
        int hidden = x.length / Math.max(1, tokens);
        float[] out = null;
        for (Segment s : segments) {
            float[] part = forward(java.util.Arrays.copyOfRange(x, s.row() * hidden, (s.row() + s.tokens()) * hidden),
                    s.tokens(), s.start(), s.cache());
            if (out == null) {
                out = new float[tokens * (part.length / s.tokens())];
            }
            System.arraycopy(part, 0, out, s.row() * (part.length / s.tokens()), part.length);
        }
        return out;
    }

    /** One sequence's rows in a batched call: rows [row, row + tokens) at positions start .. start+tokens-1. */
    record Segment(int row, int tokens, long start, KvBuffer cache) {
    }

    @Override
    void close();
}

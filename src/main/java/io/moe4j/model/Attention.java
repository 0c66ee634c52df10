package io.moe4j.model;

/** The attention block of one decoder layer; its state between calls lives in the caller's {@link KvBuffer}. */
public interface Attention extends AutoCloseable {

    /** An empty cache for one sequence. */
    KvBuffer newCache();

    /**
     * Attends the {@code tokens} rows of x [tokens, hidden] at positions start .. start+tokens-1 to themselves and to
     * what {@code cache} holds of the earlier positions; appends the new rows to the cache, drops the rows no later
     * query can see, and returns the output projection [tokens, hidden].
     */
    float[] forward(float[] x, int tokens, long start, KvBuffer cache);

    @Override
    void close();
}

package io.moe4j.model;

/** One pre-norm decoder layer: h += attention(norm(h)); h += feedForward(norm(h)). */
public final class DecoderLayer implements AutoCloseable {
    private final RmsNorm inputNorm;
    private final Attention attention;
    private final RmsNorm postAttentionNorm;
    private final FeedForward feedForward;

    public DecoderLayer(RmsNorm inputNorm, Attention attention, RmsNorm postAttentionNorm, FeedForward feedForward) {
        this.inputNorm = inputNorm;
        this.attention = attention;
        this.postAttentionNorm = postAttentionNorm;
        this.feedForward = feedForward;
    }

    public Attention attention() {
        return attention;
    }

    /** Updates the residual stream h [tokens, hidden] in place. */
    public void forward(float[] h, int tokens, int hidden, long start, KvBuffer cache) {
        float[] attended = attention.forward(inputNorm.applyRows(h, tokens, hidden), tokens, start, cache);
        FloatMath.addInPlace(h, attended);
        float[] mixed = feedForward.forward(postAttentionNorm.applyRows(h, tokens, hidden), tokens);
        FloatMath.addInPlace(h, mixed);
    }

    /** The rows of several sequences in one call: h [tokens, hidden], segments as {@link Attention#forward}. */
    public void forward(float[] h, int tokens, int hidden, java.util.List<Attention.Segment> segments) {
        float[] attended = attention.forward(inputNorm.applyRows(h, tokens, hidden), tokens, segments);
        FloatMath.addInPlace(h, attended);
        float[] mixed = feedForward.forward(postAttentionNorm.applyRows(h, tokens, hidden), tokens);
        FloatMath.addInPlace(h, mixed);
    }

    @Override
    public void close() {
        attention.close();
        feedForward.close();
    }
}

package io.moe4j.generate;

import io.moe4j.model.TokenDraw;

import java.util.SplittableRandom;

/**
 * Draws token ids from logits by {@link SamplingParams}. One sampler belongs to one sequence: it holds that
 * sequence's random generator, so the same seed and the same logits give the same tokens. Each draw takes one
 * random number ({@link #nextDraw}; greedy draws take none) and follows {@link TokenDraw}'s rule, on the host
 * ({@link #sample}) or wherever a model's logits are.
 */
public final class Sampler {
    private final SamplingParams params;
    private final SplittableRandom random;

    public Sampler(SamplingParams params) {
        this.params = params;
        this.random = new SplittableRandom(params.seed());
    }

    public SamplingParams params() {
        return params;
    }

    /** The next draw: the sampling parameters and, unless greedy, the next random number of this sequence. */
    public TokenDraw nextDraw() {
        if (params.isGreedy()) {
            return TokenDraw.greedy();
        }
        return new TokenDraw(params.temperature(), params.topK(), params.topP(), params.minP(), random.nextDouble());
    }

    /** The next token from logits[off, off + vocab). */
    public int sample(float[] logits, int off, int vocab) {
        return sample(logits, off, vocab, null);
    }

    /**
     * The next token among those {@code allowed} marks (all when null): a constraint such as a grammar narrows the
     * choice before any warper runs. Fails if nothing is allowed.
     */
    public int sample(float[] logits, int off, int vocab, boolean[] allowed) {
        return nextDraw().pick(logits, off, vocab, allowed);
    }

    /** The highest logit's id, lowest id on ties; among allowed ids only when a mask is given. */
    public static int argmax(float[] logits, int off, int vocab, boolean[] allowed) {
        return TokenDraw.argmax(logits, off, vocab, allowed);
    }
}

package io.moe4j.model;

import io.moe4j.model.linear.Linear;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Random;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * MLA attends in blocks of cached positions with an online softmax: any block size gives what one block over the
 * whole context gives (which the DeepSeek fixtures check against transformers), as one prompt and one token at a time.
 */
class LatentAttentionTest {
    static final int HIDDEN = 24;
    static final int TOKENS = 11;

    /** A dense test linear with random weights. */
    record Dense(int inFeatures, int outFeatures, float[] w) implements Linear {
        static Dense random(Random r, int in, int out) {
            float[] w = new float[in * out];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) (r.nextGaussian() / Math.sqrt(in));
            }
            return new Dense(in, out, w);
        }

        @Override
        public void forward(float[] x, int tokens, float[] y) {
            for (int t = 0; t < tokens; t++) {
                for (int o = 0; o < outFeatures; o++) {
                    y[t * outFeatures + o] = FloatMath.dot(x, t * inFeatures, w, o * inFeatures, inFeatures);
                }
            }
        }

        @Override
        public long weightBytes() {
            return 4L * w.length;
        }

        @Override
        public String describe() {
            return "test dense";
        }
    }

    static LatentAttention attention(int block) {
        Random r = new Random(11);
        int heads = 3;
        int qLora = 8;
        int kvLora = 10;
        int nope = 6;
        int ropeDim = 4;
        int v = 5;
        Rope rope = new Rope(new float[] {1f, 0.1f}, 1f, true);
        MlaSpec spec = new MlaSpec(heads, qLora, kvLora, nope, ropeDim, v, false, rope, 1e-6f,
                (float) (1 / Math.sqrt(nope + ropeDim)));
        return new LatentAttention(spec, Dense.random(r, HIDDEN, qLora), new RmsNorm(null, 1e-6f),
                Dense.random(r, qLora, heads * (nope + ropeDim)), Dense.random(r, HIDDEN, kvLora + ropeDim),
                new RmsNorm(null, 1e-6f), Dense.random(r, kvLora, heads * (nope + v)), Dense.random(r, heads * v, HIDDEN),
                new Parallel(1), block);
    }

    static float[] input() {
        Random r = new Random(5);
        float[] x = new float[TOKENS * HIDDEN];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian();
        }
        return x;
    }

    static float[] run(LatentAttention a, boolean oneAtATime) {
        float[] x = input();
        KvBuffer cache = a.newCache();
        if (!oneAtATime) {
            return a.forward(x, TOKENS, 0, cache);
        }
        float[] out = new float[TOKENS * HIDDEN];
        for (int t = 0; t < TOKENS; t++) {
            float[] row = java.util.Arrays.copyOfRange(x, t * HIDDEN, (t + 1) * HIDDEN);
            System.arraycopy(a.forward(row, 1, t, cache), 0, out, t * HIDDEN, HIDDEN);
        }
        return out;
    }

    @ParameterizedTest(name = "blocks of {0}")
    @ValueSource(ints = {1, 3, 4, 10})
    void anyBlockSizeGivesTheOneBlockResult(int block) {
        float[] whole = run(attention(LatentAttention.EXPAND_BLOCK), false);
        assertThat(relL2(run(attention(block), false), whole)).isLessThan(1e-6);
        assertThat(relL2(run(attention(block), true), whole)).isLessThan(1e-6);
    }
}

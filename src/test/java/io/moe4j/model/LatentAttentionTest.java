package io.moe4j.model;

import io.moe4j.model.linear.DenseForm;
import io.moe4j.model.linear.Linear;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Random;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * MLA attends in blocks of cached positions with an online softmax: any block size gives what one block over the
 * whole context gives (which the DeepSeek fixtures check against transformers), as one prompt and one token at a time;
 * attending absorbed (kv_b_proj taken into the query and output) gives what expanding gives, kv_b_proj's input rule
 * included; and each call takes the way with fewer multiply-adds.
 */
class LatentAttentionTest {
    static final int HIDDEN = 24;
    static final int TOKENS = 11;

    /**
     * Rounds each value to a sixteenth of its row's largest magnitude: a stand-in for a scheme's input
     * quantize-dequantize, far coarser than float rounding, so that a path skipping it is caught.
     */
    static final DenseForm.InputRule COARSE = (x, off, len) -> {
        float amax = 0f;
        for (int i = off; i < off + len; i++) {
            amax = Math.max(amax, Math.abs(x[i]));
        }
        float step = amax / 16;
        for (int i = off; step > 0 && i < off + len; i++) {
            x[i] = Math.round(x[i] / step) * step;
        }
    };

    /** A dense test linear with random weights, its input through {@code rule} first. */
    record Dense(int inFeatures, int outFeatures, float[] w, DenseForm.InputRule rule) implements Linear {
        static Dense random(Random r, int in, int out) {
            return random(r, in, out, DenseForm.InputRule.IDENTITY);
        }

        static Dense random(Random r, int in, int out, DenseForm.InputRule rule) {
            float[] w = new float[in * out];
            for (int i = 0; i < w.length; i++) {
                w[i] = (float) (r.nextGaussian() / Math.sqrt(in));
            }
            return new Dense(in, out, w, rule);
        }

        @Override
        public void forward(float[] x, int tokens, float[] y) {
            for (int t = 0; t < tokens; t++) {
                float[] row = java.util.Arrays.copyOfRange(x, t * inFeatures, (t + 1) * inFeatures);
                rule.apply(row, 0, inFeatures);
                for (int o = 0; o < outFeatures; o++) {
                    y[t * outFeatures + o] = FloatMath.dot(row, 0, w, o * inFeatures, inFeatures);
                }
            }
        }

        @Override
        public java.util.Optional<DenseForm> denseForm() {
            return java.util.Optional.of(new DenseForm(inFeatures, outFeatures, w, rule));
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
        return attention(block, LatentAttention.Path.EXPANDED);
    }

    static LatentAttention attention(int block, LatentAttention.Path path) {
        return attention(block, path, COARSE);
    }

    /** @param rule kv_b_proj's input rule */
    static LatentAttention attention(int block, LatentAttention.Path path, DenseForm.InputRule rule) {
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
                new RmsNorm(null, 1e-6f), Dense.random(r, kvLora, heads * (nope + v), rule),
                Dense.random(r, heads * v, HIDDEN), new Parallel(1), block, path);
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
        for (LatentAttention.Path path : new LatentAttention.Path[] {LatentAttention.Path.EXPANDED,
                LatentAttention.Path.ABSORBED}) {
            float[] whole = run(attention(LatentAttention.EXPAND_BLOCK, path), false);
            assertThat(relL2(run(attention(block, path), false), whole)).as("%s", path).isLessThan(1e-6);
            assertThat(relL2(run(attention(block, path), true), whole)).as("%s", path).isLessThan(1e-6);
        }
    }

    @ParameterizedTest(name = "blocks of {0}")
    @ValueSource(ints = {1, 4, 256})
    void absorbedGivesWhatExpandingGives(int block) {
        float[] expanded = run(attention(LatentAttention.EXPAND_BLOCK, LatentAttention.Path.EXPANDED), false);
        for (boolean oneAtATime : new boolean[] {false, true}) {
            float[] absorbed = run(attention(block, LatentAttention.Path.ABSORBED), oneAtATime);
            float[] cheaper = run(attention(block, LatentAttention.Path.CHEAPER), oneAtATime);
            assertThat(relL2(absorbed, expanded)).as("absorbed, one at a time %s", oneAtATime).isLessThan(1e-5);
            assertThat(relL2(cheaper, expanded)).as("cheaper, one at a time %s", oneAtATime).isLessThan(1e-5);
        }
    }

    /** The check above would pass if both paths skipped the input rule: without it the result moves well past 1e-5. */
    @org.junit.jupiter.api.Test
    void theInputRuleMovesTheResult() {
        float[] coarse = run(attention(LatentAttention.EXPAND_BLOCK, LatentAttention.Path.EXPANDED), false);
        float[] exact = run(attention(LatentAttention.EXPAND_BLOCK, LatentAttention.Path.EXPANDED,
                DenseForm.InputRule.IDENTITY), false);
        assertThat(relL2(exact, coarse)).isGreaterThan(1e-3);
    }


    /** DeepSeek-V3's shapes: a decode step absorbs, a prompt from an empty cache expands. */
    @org.junit.jupiter.api.Test
    void eachCallTakesTheWayWithFewerMultiplyAdds() {
        MlaSpec v3 = new MlaSpec(128, 1536, 512, 128, 64, 128, false, null, 1e-6f, 0.1f);
        assertThat(LatentAttention.absorbedIsCheaper(v3, 1, 4096, 4096)).isTrue();
        assertThat(LatentAttention.absorbedIsCheaper(v3, 1, 2, 2)).isTrue();
        long prompt = 4096;
        assertThat(LatentAttention.absorbedIsCheaper(v3, (int) prompt, prompt * (prompt + 1) / 2, prompt)).isFalse();
        assertThat(LatentAttention.absorbedIsCheaper(v3, 1, 1, 1)).isFalse();
    }
}

package io.moe4j.model;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.Arrays;
import java.util.Random;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Prompts (several tokens a call, tasks over interleaved tokens) give what the same tokens one at a time give, for
 * full, sliding and chunked windows, with and without sinks, groups of 1 to 5 query heads a KV head, heads of 64 and
 * of widths with a scalar tail, and prompts that continue a cache.
 */
class GroupedQueryAttentionTest {
    static final int HIDDEN = 40;

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of(8, 1, 64, AttentionWindow.FULL, true),
                Arguments.of(8, 2, 16, AttentionWindow.sliding(9), true),
                Arguments.of(10, 2, 12, AttentionWindow.chunked(13), false),
                Arguments.of(4, 4, 19, AttentionWindow.FULL, false),
                Arguments.of(6, 2, 8, AttentionWindow.sliding(20), false));
    }

    static GroupedQueryAttention attention(int heads, int kvHeads, int d, AttentionWindow window, boolean sinks) {
        Random r = new Random(heads * 31 + d);
        GqaSpec spec = new GqaSpec(heads, kvHeads, d, false, sinks, GqaSpec.QkNorm.NONE, null, window, null,
                (float) (1 / Math.sqrt(d)));
        float[] sinkLogits = null;
        if (sinks) {
            sinkLogits = new float[heads];
            for (int h = 0; h < heads; h++) {
                sinkLogits[h] = (float) r.nextGaussian();
            }
        }
        return new GroupedQueryAttention(spec, LatentAttentionTest.Dense.random(r, HIDDEN, heads * d),
                LatentAttentionTest.Dense.random(r, HIDDEN, kvHeads * d),
                LatentAttentionTest.Dense.random(r, HIDDEN, kvHeads * d),
                LatentAttentionTest.Dense.random(r, heads * d, HIDDEN), null, null, sinkLogits, new Parallel(2));
    }

    @ParameterizedTest(name = "{0} heads over {1}, d {2}, {3}, sinks {4}")
    @MethodSource("shapes")
    void aPromptGivesWhatOneTokenAtATimeGives(int heads, int kvHeads, int d, AttentionWindow window, boolean sinks) {
        int tokens = 53;
        float[] x = new float[tokens * HIDDEN];
        Random r = new Random(3);
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian() * 2;
        }
        GroupedQueryAttention a = attention(heads, kvHeads, d, window, sinks);
        KvBuffer oneCache = a.newCache();
        float[] one = new float[tokens * HIDDEN];
        for (int t = 0; t < tokens; t++) {
            System.arraycopy(a.forward(Arrays.copyOfRange(x, t * HIDDEN, (t + 1) * HIDDEN), 1, t, oneCache), 0, one,
                    t * HIDDEN, HIDDEN);
        }
        // a prompt of 3 tokens, then one of 31 and one of 19, each continuing the cache
        KvBuffer cache = a.newCache();
        float[] prompt = new float[tokens * HIDDEN];
        int at = 0;
        for (int n : new int[] {3, 31, 19}) {
            float[] y = a.forward(Arrays.copyOfRange(x, at * HIDDEN, (at + n) * HIDDEN), n, at, cache);
            System.arraycopy(y, 0, prompt, at * HIDDEN, n * HIDDEN);
            at += n;
        }
        assertThat(relL2(prompt, one)).isLessThan(1e-5);
    }
}

package io.moe4j.generate;

import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The adjustments as OpenAI's API and vLLM define them, checked against a direct reading of the definitions (counts
 * taken from the reply's list of tokens at each step, not kept as the adjuster keeps them).
 */
class LogitAdjustmentsTest {

    /** bias, then repetition over prompt and reply (divide a positive logit, multiply a negative one), then
     * frequency times the count and presence once, per token of the reply. */
    private static float[] byDefinition(float[] raw, LogitAdjustments a, int[] prompt, List<Integer> reply) {
        float[] l = raw.clone();
        for (int id = 0; id < l.length; id++) {
            final int t = id;
            if (a.bias().containsKey(id)) {
                l[id] += a.bias().get(id);
            }
            boolean inPrompt = java.util.Arrays.stream(prompt).anyMatch(p -> p == t);
            long count = reply.stream().filter(r -> r == t).count();
            if (inPrompt || count > 0) {
                float r = (float) a.repetitionPenalty();
                l[id] = l[id] > 0 ? l[id] / r : l[id] * r;
            }
            if (count > 0) {
                l[id] -= (float) (a.frequencyPenalty() * count + a.presencePenalty());
            }
        }
        return l;
    }

    @Test
    void eachStepMatchesTheDefinition() {
        SplittableRandom random = new SplittableRandom(7);
        int vocab = 50;
        for (int trial = 0; trial < 40; trial++) {
            Map<Integer, Float> bias = Map.of(random.nextInt(vocab), (float) (random.nextDouble() * 200 - 100),
                    random.nextInt(vocab) + vocab, 5f);   // an id past the vocabulary changes nothing
            LogitAdjustments a = new LogitAdjustments(random.nextDouble() * 4 - 2, random.nextDouble() * 4 - 2,
                    0.5 + random.nextDouble() * 2, bias);
            int[] prompt = random.ints(8, 0, vocab).toArray();
            LogitAdjustments.Adjuster adjuster = new LogitAdjustments.Adjuster(a, prompt);
            List<Integer> reply = new java.util.ArrayList<>();
            for (int step = 0; step < 12; step++) {
                float[] raw = new float[vocab];
                for (int i = 0; i < vocab; i++) {
                    raw[i] = (float) (random.nextGaussian() * 3);
                }
                float[] got = raw.clone();
                adjuster.apply(got, vocab);
                assertThat(got).as("trial %d step %d", trial, step).containsExactly(byDefinition(raw, a, prompt, reply));
                int token = random.nextInt(vocab / 3);   // repeats likely
                adjuster.accept(token);
                reply.add(token);
            }
        }
    }

    @Test
    void theNeutralValuesChangeNothingAndOthersAreChecked() {
        assertThat(LogitAdjustments.NONE.isNone()).isTrue();
        assertThat(new LogitAdjustments(0, 0, 1.2, Map.of()).isNone()).isFalse();
        assertThatThrownBy(() -> new LogitAdjustments(2.5, 0, 1, Map.of())).isInstanceOf(MoeException.class)
                .hasMessageContaining("presence");
        assertThatThrownBy(() -> new LogitAdjustments(0, -3, 1, Map.of())).isInstanceOf(MoeException.class)
                .hasMessageContaining("frequency");
        assertThatThrownBy(() -> new LogitAdjustments(0, 0, 0, Map.of())).isInstanceOf(MoeException.class)
                .hasMessageContaining("repetition");
        assertThatThrownBy(() -> new LogitAdjustments(0, 0, 1, Map.of(3, 150f))).isInstanceOf(MoeException.class)
                .hasMessageContaining("token 3");
    }

    /** A sequence with adjustments draws from its logits on the host; one without may let the model draw. */
    @Test
    void adjustedRepliesDrawOnTheHost() {
        SamplingParams plain = SamplingParams.greedy();
        SamplingParams adjusted = plain.withAdjustments(new LogitAdjustments(0.5, 0, 1, Map.of()));
        ReplyStream free = new ReplyStream(plain, null, List.of(), id -> false, id -> "x", () -> "");
        ReplyStream held = new ReplyStream(adjusted, null, List.of(), id -> false, id -> "x", () -> "", new int[0]);
        assertThat(free.drawsInModel()).isTrue();
        assertThat(held.drawsInModel()).isFalse();
        assertThatThrownBy(held::nextDraw).isInstanceOf(IllegalStateException.class);
        // the penalty reaches the draw: the greedy choice repeated once is passed over the next time
        float[] logits = {0f, 1f, 0.9f};
        int first = held.draw(logits.clone(), 3, 10);
        held.take(first);
        assertThat(first).isEqualTo(1);
        assertThat(held.draw(logits.clone(), 3, 10)).isEqualTo(2);
    }
}

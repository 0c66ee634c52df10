package io.moe4j.generate;

import org.junit.jupiter.api.Test;

import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * A row's distribution (vector lanes, groups passed over) against a plain reading: the log softmax in double and
 * the top ids by sorting, on rows of every length around the lane width, with ties, -infinity and NaN.
 */
class TokenLogprobsTest {

    @Test
    void theTopAndTheLogPartitionAreThePlainOnes() {
        SplittableRandom random = new SplittableRandom(3);
        for (int trial = 0; trial < 400; trial++) {
            int vocab = trial < 100 ? 1 + trial : 100 + random.nextInt(3000);
            float[] logits = new float[vocab + 7];   // a row shorter than its array, as a batch's are not
            for (int i = 0; i < logits.length; i++) {
                logits[i] = switch (random.nextInt(20)) {
                    case 0 -> Float.NEGATIVE_INFINITY;
                    case 1 -> 2.5f;   // ties
                    default -> (float) (random.nextGaussian() * 4);
                };
            }
            boolean nan = trial % 7 == 3;
            if (nan) {
                logits[random.nextInt(vocab)] = Float.NaN;
            }
            int top = new int[] {0, 1, 5, 20}[trial % 4];
            TokenLogprobs.Distribution d = TokenLogprobs.Distribution.of(logits, vocab, top);
            int[] want = IntStream.range(0, vocab).filter(i -> !Float.isNaN(logits[i])).boxed()
                    .sorted(Comparator.<Integer>comparingDouble(i -> -logits[i]).thenComparingInt(i -> i))
                    .limit(top).mapToInt(Integer::intValue).toArray();
            assertThat(d.topIds()).as("trial %d", trial).containsExactly(want);
            if (nan) {
                assertThat(d.logPartition()).isNaN();
                continue;
            }
            double max = IntStream.range(0, vocab).mapToDouble(i -> logits[i]).max().orElseThrow();
            double sum = IntStream.range(0, vocab).mapToDouble(i -> Math.exp(logits[i] - max)).sum();
            double lse = max + Math.log(sum);
            assertThat(d.logPartition()).as("trial %d", trial).isCloseTo(lse, within(1e-5 * Math.max(1, Math.abs(lse))));
            for (int j = 0; j < want.length; j++) {
                float expected = logits[want[j]] == Float.NEGATIVE_INFINITY ? TokenLogprobs.FLOOR
                        : (float) (logits[want[j]] - lse);
                assertThat(d.topLogprobs()[j]).isCloseTo(expected, within(1e-4f));
            }
        }
    }

    @Test
    void aRowOfMinusInfinityFloorsEveryValue() {
        float[] logits = new float[33];
        java.util.Arrays.fill(logits, Float.NEGATIVE_INFINITY);
        TokenLogprobs.Distribution d = TokenLogprobs.Distribution.of(logits, 33, 3);
        assertThat(d.topIds()).containsExactly(0, 1, 2);
        assertThat(d.topLogprobs()).containsOnly(TokenLogprobs.FLOOR);
        assertThat(d.of(5, logits[5]).logprob()).isEqualTo(TokenLogprobs.FLOOR);
    }
}

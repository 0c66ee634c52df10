package io.moe4j.model;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Continuous batching: sequences at different positions, some fed a prompt and some one token, run in one
 * {@link Model#step} and get the logits each gets alone (and, after the step, the same continuation).
 */
class BatchedStepTest {

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String name : List.of("m_gptoss_mxfp4", "m_deepseek_ct_fp8_block", "m_llama4_bf16", "m_qwen3_ct_nvfp4")) {
            for (String backend : List.of("emulation", "cpu")) {
                out.add(Arguments.of(name, backend));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("cases")
    void aBatchedStepGivesEachSequenceItsOwnLogits(String name, String backend) {
        ModelCases.Case c = ModelCases.load(name);
        int[] ids = c.inputIds();
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(backend).withThreads(2))) {
            // Three sequences: a fresh prompt, one part-way (decoding one token), one starting at another offset.
            int[] a = Arrays.copyOfRange(ids, 0, 5);
            int[] bHistory = Arrays.copyOfRange(ids, 0, 9);
            int[] bNext = {ids[9]};
            int[] cPrompt = Arrays.copyOfRange(ids, 3, ids.length);

            Session sa = model.newSession();
            Session sb = model.newSession();
            Session sc = model.newSession();
            sb.prefillLast(bHistory);
            float[][] batched = model.step(List.of(sa, sb, sc), List.of(a, bNext, cPrompt));

            float[] aloneA = model.newSession().prefillLast(a);
            Session lone = model.newSession();
            lone.prefillLast(bHistory);
            float[] aloneB = lone.decode(bNext[0]);
            float[] aloneC = model.newSession().prefillLast(cPrompt);

            double tolerance = "emulation".equals(backend) ? 1e-6 : 1e-4;
            assertThat(relL2(batched[0], aloneA)).isLessThanOrEqualTo(tolerance);
            assertThat(relL2(batched[1], aloneB)).isLessThanOrEqualTo(tolerance);
            assertThat(relL2(batched[2], aloneC)).isLessThanOrEqualTo(tolerance);
            assertThat(sa.position()).isEqualTo(5);
            assertThat(sb.position()).isEqualTo(10);
            assertThat(sc.position()).isEqualTo(cPrompt.length);

            // The caches the step filled continue as the session's own would.
            float[] next = model.step(List.of(sb), List.of(new int[] {ids[10]}))[0];
            float[] loneNext = lone.decode(ids[10]);
            assertThat(relL2(next, loneNext)).isLessThanOrEqualTo(tolerance);

            // Draws: a sequence with one gets the token drawn from its logits and no logits, the other its logits.
            Session twin = model.newSession();
            twin.prefillLast(Arrays.copyOfRange(ids, 0, 11));
            StepOutput mixed = model.step(List.of(sb, twin), List.of(new int[] {ids[11]}, new int[] {ids[11]}),
                    new TokenDraw[] {TokenDraw.greedy(), null});
            assertThat(mixed.logits()[0]).isNull();
            assertThat(mixed.drawn()[1]).isEqualTo(-1);
            assertThat(mixed.drawn()[0]).isEqualTo(Logits.argmax(mixed.logits()[1], 0, mixed.logits()[1].length));
            TokenDraw sampled = new TokenDraw(0.9, 0, 0.8, 0, 0.37);
            StepOutput drawn = model.step(List.of(sb, twin), List.of(new int[] {ids[12]}, new int[] {ids[12]}),
                    new TokenDraw[] {null, sampled});
            assertThat(drawn.logits()[1]).isNull();
            assertThat(drawn.drawn()[1]).isEqualTo(sampled.pick(drawn.logits()[0], 0, drawn.logits()[0].length, null));
        }
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("cases")
    void aBadStepIsRefusedBeforeAnythingRuns(String name, String backend) {
        ModelCases.Case c = ModelCases.load(name);
        try (Model model = Model.load(c.dir(), ModelOptions.defaults().withBackend(backend).withThreads(1))) {
            Session s = model.newSession();
            assertThatThrownBy(() -> model.step(List.of(s, s), List.of(new int[] {1}, new int[] {2})))
                    .hasMessageContaining("twice");
            assertThatThrownBy(() -> model.step(List.of(s), List.of(new int[0]))).hasMessageContaining("no tokens");
            assertThatThrownBy(() -> model.step(List.of(s), List.of(new int[] {c.vocab()})))
                    .hasMessageContaining("outside the vocabulary");
            assertThat(s.position()).isZero();
            assertThat(model.step(List.of(), List.of())).isEmpty();
        }
    }

    static double relL2(float[] got, float[] want) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = got[i] - want[i];
            num += d * d;
            den += (double) want[i] * want[i];
        }
        return Math.sqrt(num / den);
    }
}

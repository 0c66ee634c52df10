package io.moe4j.generate;

import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.safetensors.SafetensorsFile;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/**
 * Perplexity against transformers: on every whole-model case of ../shared/conformance-models, the mean negative
 * log-likelihood of its tokens is the one the case's expected logits (transformers, float64) give; read in windows,
 * each token is scored once from its own window's logits.
 */
public class PerplexityTest {
    static Path root() {
        return Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("conformance-models");
    }

    static Stream<Arguments> cases() throws Exception {
        List<Arguments> out = new ArrayList<>();
        try (Stream<Path> dirs = Files.list(root())) {
            for (Path d : dirs.filter(p -> Files.exists(p.resolve("io.safetensors"))).sorted().toList()) {
                for (String backend : List.of("emulation", "cpu", "cuda")) {
                    out.add(Arguments.of(d.getFileName().toString(), backend));
                }
            }
        }
        return out.stream();
    }

    /** The negative log-likelihood of token j + 1 under row j of {@code logits} [T, V], summed over j < T - 1. */
    public static double nll(float[] logits, int[] ids, int vocab) {
        double sum = 0;
        for (int j = 0; j + 1 < ids.length; j++) {
            double max = Double.NEGATIVE_INFINITY;
            for (int v = 0; v < vocab; v++) {
                max = Math.max(max, logits[j * vocab + v]);
            }
            double z = 0;
            for (int v = 0; v < vocab; v++) {
                z += Math.exp(logits[j * vocab + v] - max);
            }
            sum -= logits[j * vocab + ids[j + 1]] - max - Math.log(z);
        }
        return sum;
    }

    @ParameterizedTest(name = "{0} on {1}")
    @MethodSource("cases")
    void meanNllIsTransformers(String name, String backend) {
        Path dir = root().resolve(name);
        int[] ids;
        float[] expected;
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            ids = io.tensor("input_ids").toIntArray();
            expected = io.tensor("logits").toFloatArray();
        }
        if (backend.equals("cuda")) {
            var probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
            org.junit.jupiter.api.Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: "
                    + probe.reason());
        }
        // the device decoder's logits are within the cases' any-backend tolerance, further than the host's
        double tolerance = backend.equals("cuda") ? 1e-3 : 1e-5;
        try (Model model = Model.load(dir, ModelOptions.defaults().withBackend(backend).withThreads(2))) {
            double want = nll(expected, ids, model.vocabSize()) / (ids.length - 1);
            Perplexity.Result r = Perplexity.score(model, ids, ids.length, ids.length, w -> { });
            assertThat(r.scored()).isEqualTo(ids.length - 1);
            assertThat(r.windows()).isEqualTo(1);
            // measured within 7e-8 of it on the host's backends (2026-11-29, Zen 3); uniform logits (ln V a token)
            // would be 7-15% away on these cases
            assertThat(r.meanNll()).isCloseTo(want, within(tolerance * Math.abs(want)));
            assertThat(r.perplexity()).isCloseTo(Math.exp(want), within(tolerance * Math.exp(want)));
        }
    }

    /**
     * Windows of 8 every 3 tokens, in passes of 2 positions: each token after the first is scored once, from the
     * logits of a fresh prefill of its own window (the first window that reaches it).
     */
    @ParameterizedTest
    @ValueSource(strings = {"m_gptoss_mxfp4", "m_llama4_bf16"})
    void windowsScoreEachTokenOnceFromItsWindow(String name) {
        Path dir = root().resolve(name);
        int[] ids;
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            ids = io.tensor("input_ids").toIntArray();
        }
        int window = 8;
        int stride = 3;
        try (Model model = Model.load(dir, ModelOptions.defaults().withBackend("cpu").withThreads(2))) {
            int vocab = model.vocabSize();
            double want = 0;
            int windows = 0;
            int scoredTo = 1;
            for (int begin = 0; scoredTo < ids.length; begin += stride) {
                int end = Math.min(begin + window, ids.length);
                float[] logits;
                try (Session s = model.newSession()) {
                    logits = s.prefill(Arrays.copyOfRange(ids, begin, end));
                }
                for (int j = Math.max(scoredTo, begin + 1); j < end; j++) {
                    float[] row = Arrays.copyOfRange(logits, (j - 1 - begin) * vocab, (j - begin) * vocab);
                    want -= io.moe4j.testing.LogSoftmax.of(row)[ids[j]];
                }
                scoredTo = end;
                windows++;
            }
            List<Integer> heard = new ArrayList<>();
            Perplexity.Result r = Perplexity.score(model, ids, window, stride, 2, heard::add);
            assertThat(r.windows()).isEqualTo(windows).isEqualTo(Perplexity.windows(ids.length, window, stride));
            assertThat(heard).hasSize(windows).last().isEqualTo(windows);
            assertThat(r.scored()).isEqualTo(ids.length - 1);
            assertThat(r.nll()).isCloseTo(want, within(1e-4 * Math.abs(want)));
            assertThatThrownBy(() -> Perplexity.score(model, ids, 1, 1, w -> { }))
                    .hasMessageContaining("window");
            assertThatThrownBy(() -> Perplexity.score(model, ids, 8, 9, w -> { })).hasMessageContaining("stride");
            assertThatThrownBy(() -> Perplexity.score(model, new int[] {1}, 8, 4, w -> { }))
                    .hasMessageContaining("at least 2 tokens");
        }
    }
}

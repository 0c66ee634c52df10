package io.moe4j.cli;

import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.SamplingParams;
import io.moe4j.model.GenerationConfig;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The sampling options of generate and chat over a model whose generation_config samples. */
class SamplingArgsTest {
    @TempDir
    static Path tmp;
    static MoeModel model;

    @Command
    static final class Holder {
        @Mixin
        SamplingArgs sampling;
    }

    @BeforeAll
    static void load() {
        model = MoeModel.load(RandomModels.qwen3(tmp.resolve("qwen3-random"), 5), ModelOptions.defaults().withThreads(2));
    }

    @AfterAll
    static void close() {
        model.close();
    }

    private static GenerationRequest parse(String... args) {
        Holder h = new Holder();
        new CommandLine(h).parseArgs(args);
        return h.sampling.request(model);
    }

    @Test
    void withoutOptionsTheModelsGenerationConfigSamples() {
        GenerationConfig g = model.generationConfig();
        assertThat(g.doSample()).isTrue();
        GenerationRequest r = parse();
        SamplingParams s = r.sampling();
        assertThat(s.temperature()).isEqualTo(g.temperature());
        assertThat(s.topK()).isEqualTo(g.topK());
        assertThat(s.topP()).isEqualTo(g.topP());
        assertThat(s.minP()).isZero();
        assertThat(r.maxTokens()).isEqualTo(256);
        assertThat(r.stop()).isEmpty();
        assertThat(r.eosIds()).isEqualTo(model.eosIds());
    }

    @Test
    void optionsGivenWinOverTheGenerationConfig() {
        GenerationRequest r = parse("--temperature", "0", "--top-k", "5", "--min-p", "0.1", "--seed", "7",
                "--max-tokens", "9", "--stop", "a", "--stop", "b");
        SamplingParams s = r.sampling();
        assertThat(s.isGreedy()).isTrue();
        assertThat(s.topK()).isEqualTo(5);
        assertThat(s.topP()).isEqualTo(model.generationConfig().topP());
        assertThat(s.minP()).isEqualTo(0.1);
        assertThat(s.seed()).isEqualTo(7);
        assertThat(r.maxTokens()).isEqualTo(9);
        assertThat(r.stop()).containsExactly("a", "b");
        assertThat(s.adjustments().isNone()).isTrue();
    }

    @Test
    void penaltiesReachTheSampling() {
        SamplingParams s = parse("--presence-penalty", "0.5", "--frequency-penalty", "-1", "--repetition-penalty",
                "1.1").sampling();
        assertThat(s.adjustments().presencePenalty()).isEqualTo(0.5);
        assertThat(s.adjustments().frequencyPenalty()).isEqualTo(-1);
        assertThat(s.adjustments().repetitionPenalty()).isEqualTo(1.1);
        for (String[] bad : new String[][] {{"--presence-penalty", "3"}, {"--frequency-penalty", "NaN"},
                {"--repetition-penalty", "0"}}) {
            Holder h = new Holder();
            new CommandLine(h).parseArgs(bad);
            org.assertj.core.api.Assertions.assertThatThrownBy(h.sampling::check)
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith(bad[0]);
        }
    }
}

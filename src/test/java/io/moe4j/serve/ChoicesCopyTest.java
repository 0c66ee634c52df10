package io.moe4j.serve;

import io.moe4j.generate.SamplingParams;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.safetensors.SafetensorsFile;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A request's choices read their prompt once on a real decoder with sliding-window layers (gpt-oss's conformance
 * case, window 8), with and without the prefix cache: the choices after the first copy its sequence, and each answers
 * as it does alone.
 */
class ChoicesCopyTest {
    /** Token ids as text: each id its own character, no end-of-sequence id. */
    private static final TextCodec IDS = new TextCodec() {
        @Override
        public int[] renderChat(ChatPrompt prompt) {
            throw new UnsupportedOperationException();
        }

        @Override
        public int[] encode(String prompt) {
            return prompt.chars().toArray();
        }

        @Override
        public int[] eosIds() {
            return new int[0];
        }

        @Override
        public Detokenizer detokenizer() {
            return new Detokenizer() {
                @Override
                public String accept(int id) {
                    return "<" + id + ">";
                }

                @Override
                public String flush() {
                    return "";
                }
            };
        }
    };

    private static String answer(Scheduler s, GenerationRequest r) throws Exception {
        Collector c = new Collector();
        s.submit(r, c);
        return c.await().text();
    }

    @Test
    void choicesCopyTheSequenceThatReadTheirPromptThroughSlidingWindows() throws Exception {
        Path dir = Path.of(System.getProperty("moe4j.shared", "../shared"), "conformance-models", "m_gptoss_mxfp4");
        int[] prompt;
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            prompt = io.tensor("input_ids").toIntArray(); // 24 tokens: three windows of 8
        }
        try (Model model = Model.load(dir, ModelOptions.defaults().withBackend("cpu").withThreads(2))) {
            ModelSteps steps = new ModelSteps(model);
            List<GenerationRequest> requests = new ArrayList<>();
            List<String> alone = new ArrayList<>();
            try (Scheduler s = new Scheduler(steps, IDS, new SchedulerConfig(1, 4, 64, 0), new ServeMetrics())) {
                for (int i = 0; i < 3; i++) {
                    GenerationRequest r = new GenerationRequest(prompt, new SamplingParams(1.0, 0, 1.0, 0.0, 7 + i),
                            6, List.of());
                    requests.add(r);
                    alone.add(answer(s, r));
                }
            }
            for (int kept : new int[] {0, 2}) {
                ServeMetrics metrics = new ServeMetrics();
                // 5 prompt tokens a step: the prompt takes five steps to read
                try (Scheduler s = new Scheduler(steps, IDS, new SchedulerConfig(4, 8, 5, kept), metrics)) {
                    List<Collector> collectors = List.of(new Collector(), new Collector(), new Collector());
                    s.submitAll(requests, new ArrayList<>(collectors));
                    for (int i = 0; i < 3; i++) {
                        assertThat(collectors.get(i).await().text()).as("choice %d, %d kept", i, kept)
                                .isEqualTo(alone.get(i));
                    }
                }
                assertThat(metrics.prometheus()).as("%d kept", kept).contains("moe4j_prefix_copies_total 2");
            }
        }
    }
}

package io.moe4j.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Bad models and bad use of a session: one clear error naming the file, key or tensor, never a crash. */
class ModelBadInputTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final String GPT_OSS = "m_gptoss_mxfp4";

    static ModelOptions options() {
        return ModelOptions.defaults().withBackend("emulation").withThreads(1);
    }

    /** A copy of a fixture with its config edited. */
    static Path withConfig(Path tmp, String name, Consumer<ObjectNode> edit) throws IOException {
        Path src = ModelCases.root().resolve(name);
        ObjectNode config = (ObjectNode) JSON.readTree(src.resolve("config.json").toFile());
        edit.accept(config);
        JSON.writeValue(tmp.resolve("config.json").toFile(), config);
        Files.copy(src.resolve("model.safetensors"), tmp.resolve("model.safetensors"));
        return tmp;
    }

    /** A copy of a fixture with one tensor left out, or replaced by {@code replacement} when that is not null. */
    static Path withTensor(Path tmp, String name, String tensor, float[] replacement, long... shape) throws IOException {
        Path src = ModelCases.root().resolve(name);
        Files.copy(src.resolve("config.json"), tmp.resolve("config.json"));
        try (SafetensorsFile f = SafetensorsFile.open(src.resolve("model.safetensors"))) {
            SafetensorsWriter w = new SafetensorsWriter();
            for (String n : f.tensors().keySet()) {
                Tensor t = f.tensor(n);
                if (!n.equals(tensor)) {
                    w.add(n, t.dtype(), t.shape(), t.segment());
                } else if (replacement != null) {
                    w.addF32(n, shape, replacement);
                }
            }
            w.write(tmp.resolve("model.safetensors"));
        }
        return tmp;
    }

    @Test
    void aTopKOutsideTheExpertsNamesItsKey(@TempDir Path tmp) throws IOException {
        for (int k : new int[] {0, 17}) {
            Path dir = Files.createDirectories(tmp.resolve("k" + k));
            withConfig(dir, "m_qwen3_hf_fp8_block", c -> c.put("num_experts_per_tok", k));
            assertThatThrownBy(() -> Model.load(dir, options()).close()).isInstanceOf(MoeException.class)
                    .hasMessageContaining("config.json").hasMessageContaining("num_experts_per_tok " + k
                            + " must be in [1, 16]");
        }
    }

    @Test
    void aFractionalCountOrNoModelTypeIsNamed(@TempDir Path tmp) throws IOException {
        Path half = withConfig(Files.createDirectories(tmp.resolve("half")), GPT_OSS,
                c -> c.put("num_hidden_layers", 2.5));
        assertThatThrownBy(() -> Model.load(half, options()).close()).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json").hasMessageContaining("needs an integer 'num_hidden_layers'");
        Path whole = withConfig(Files.createDirectories(tmp.resolve("whole")), GPT_OSS,
                c -> c.put("num_hidden_layers", 2.0));
        Model.load(whole, options()).close();
        Path none = withConfig(Files.createDirectories(tmp.resolve("none")), GPT_OSS, c -> c.remove("model_type"));
        assertThatThrownBy(() -> Model.load(none, options()).close()).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json: no model_type (supported: ");
    }

    @Test
    void configJsonThatDoesNotParseIsOneLineWithWhere(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> { });
        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"gpt_oss\",\n }");
        assertThatThrownBy(() -> Model.load(dir, options()).close()).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json: not valid JSON").hasMessageContaining("(line 2, column 2)")
                .hasMessageNotContaining("\n").hasMessageNotContaining("Source:");
    }

    @Test
    void aTokenizerLargerThanTheVocabularyIsRefusedAtLoad(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, "m_qwen3_hf_fp8_block", c -> { });
        Path tokenizers = io.moe4j.testing.RandomModels.sharedTokenizers().resolve("qwen3");
        try (var in = new java.util.zip.GZIPInputStream(Files.newInputStream(tokenizers.resolve("tokenizer.json.gz")))) {
            Files.copy(in, dir.resolve("tokenizer.json"));
        }
        Files.copy(tokenizers.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
        assertThatThrownBy(() -> io.moe4j.generate.MoeModel.load(dir, options()).close())
                .isInstanceOf(MoeException.class).hasMessageContaining("tokenizer.json")
                .hasMessageContaining("more than the model's vocab_size of 256");
    }

    @Test
    void anUnknownModelTypeIsNamed(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> c.put("model_type", "mamba"));
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json").hasMessageContaining("'mamba'");
    }

    @Test
    void anArchitectureThatIsNotACausalLmOfTheFamilyIsNamed(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> c.putArray("architectures").add("GptOssForSequenceClassification"));
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json").hasMessageContaining("GptOssForSequenceClassification");
    }

    @Test
    void anUnsupportedRopeTypeIsNamed(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> ((ObjectNode) c.get("rope_scaling")).put("rope_type", "longrope"));
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json").hasMessageContaining("'longrope'");
    }

    @Test
    void aMissingConfigKeyIsNamed(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> c.remove("max_position_embeddings"));
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("config.json").hasMessageContaining("'max_position_embeddings'");
    }

    @Test
    void aMissingTensorIsNamed(@TempDir Path tmp) throws IOException {
        Path dir = withTensor(tmp, GPT_OSS, "model.layers.1.self_attn.sinks", null);
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("model.layers.1.self_attn.sinks").hasMessageContaining("missing");
    }

    @Test
    void aMisshapenTensorIsNamedWithBothShapes(@TempDir Path tmp) throws IOException {
        Path dir = withTensor(tmp, GPT_OSS, "model.layers.0.self_attn.k_proj.weight", new float[32 * 128], 32, 128);
        assertThatThrownBy(() -> Model.load(dir, options())).isInstanceOf(MoeException.class)
                .hasMessageContaining("model.layers.0.self_attn.k_proj.weight")
                .hasMessageContaining("[64, 128]").hasMessageContaining("[32, 128]");
    }

    @Test
    void runningPastMaxPositionEmbeddingsIsAClearErrorThatLeavesTheSessionUsable(@TempDir Path tmp) throws IOException {
        Path dir = withConfig(tmp, GPT_OSS, c -> c.put("max_position_embeddings", 6));
        try (Model model = Model.load(dir, options()); Session session = model.newSession()) {
            assertThat(model.contextLimit()).isEqualTo(6);
            session.prefill(new int[] {1, 2, 3, 4});
            assertThatThrownBy(() -> session.prefill(new int[] {5, 6, 7})).isInstanceOf(MoeException.class)
                    .hasMessageContaining("context").hasMessageContaining("max_position_embeddings 6");
            assertThat(session.position()).isEqualTo(4);
            session.decode(5);
            session.decode(6);
            assertThatThrownBy(() -> session.decode(7)).isInstanceOf(MoeException.class);
            assertThat(session.position()).isEqualTo(6);
        }
    }

    @Test
    void aUserContextLimitBelowTheModelsIsEnforced() {
        ModelCases.Case c = ModelCases.load(GPT_OSS);
        try (Model model = Model.load(c.dir(), options().withContextLimit(3)); Session session = model.newSession()) {
            assertThat(model.contextLimit()).isEqualTo(3);
            assertThatThrownBy(() -> session.prefill(new int[] {1, 2, 3, 4})).isInstanceOf(MoeException.class)
                    .hasMessageContaining("context limit of 3");
            assertThat(session.position()).isZero();
        }
    }

    @Test
    void aTokenOutsideTheVocabularyIsNamed() {
        ModelCases.Case c = ModelCases.load(GPT_OSS);
        try (Model model = Model.load(c.dir(), options()); Session session = model.newSession()) {
            assertThatThrownBy(() -> session.prefill(new int[] {1, c.vocab()})).isInstanceOf(MoeException.class)
                    .hasMessageContaining("token id " + c.vocab()).hasMessageContaining("index 1");
            assertThat(session.position()).isZero();
        }
    }

    /** An lm_head that writes NaN: greedy decoding (the model's own choice) fails naming it, never gives token 0. */
    @Test
    void aNanModelOutputIsAnErrorUnderGreedyDecoding() {
        ModelCases.Case c = ModelCases.load(GPT_OSS);
        LinearProvider nanHead = replacingForward("lm_head", "writes NaN",
                (l, x, tokens, y) -> java.util.Arrays.fill(y, 0, tokens * l.outFeatures(), Float.NaN));
        try (Model model = Model.load(c.dir(), options().withLinears(nanHead)); Session session = model.newSession()) {
            session.prefill(new int[] {1, 2});
            assertThatThrownBy(() -> session.decodeGreedy(3)).isInstanceOf(MoeException.class)
                    .hasMessageContaining("NaN").hasMessageContaining("position 2");
        }
    }

    @Test
    void aClosedSessionRefusesWorkAndClosesOnce() {
        ModelCases.Case c = ModelCases.load(GPT_OSS);
        try (Model model = Model.load(c.dir(), options())) {
            Session session = model.newSession();
            session.prefill(new int[] {1, 2});
            session.close();
            session.close();
            for (org.assertj.core.api.ThrowableAssert.ThrowingCallable use : List.<org.assertj.core.api
                    .ThrowableAssert.ThrowingCallable>of(() -> session.decode(1), () -> session.prefill(new int[] {1}),
                    () -> session.decodeGreedy(1), session::reset, () -> session.rewind(0),
                    () -> session.keepForRewind(8))) {
                assertThatThrownBy(use).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
            }
            // The model itself still serves new sessions.
            try (Session fresh = model.newSession()) {
                assertThat(fresh.prefill(new int[] {1, 2})).hasSize(2 * c.vocab());
            }
        }
    }

    @Test
    void aBackendThatDoesNotRunWholeModelsIsNamed() {
        assertThatThrownBy(() -> options().withBackend("metal")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'metal'").hasMessageContaining("emulation");
    }

    @Test
    void aSessionThatFailedInsideALayerRefusesWorkUntilReset() {
        ModelCases.Case c = ModelCases.load(GPT_OSS);
        java.util.concurrent.atomic.AtomicBoolean failOnce = new java.util.concurrent.atomic.AtomicBoolean(true);
        LinearProvider failing = replacingForward("model.layers.1.self_attn.o_proj", "failing once",
                (l, x, tokens, y) -> {
                    if (failOnce.getAndSet(false)) {
                        throw new MoeException("injected failure");
                    }
                    l.forward(x, tokens, y);
                });
        try (Model model = Model.load(c.dir(), options().withLinears(failing)); Session session = model.newSession()) {
            assertThatThrownBy(() -> session.prefill(c.inputIds())).hasMessageContaining("injected failure");
            assertThatThrownBy(() -> session.decode(1)).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("layer 1").hasMessageContaining("reset()");
            session.reset();
            assertThat(io.moe4j.testing.Norms.relL2(session.prefill(c.inputIds()), c.logits()))
                    .isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    /** What a replaced linear runs instead of its forward; {@code original} is the linear as loaded. */
    @FunctionalInterface
    private interface Forward {
        void run(io.moe4j.model.linear.Linear original, float[] x, int tokens, float[] y);
    }

    /** Unquantized linears, but {@code module}'s forward runs {@code forward} (a fault injected where a user meets it). */
    private static LinearProvider replacingForward(String module, String describe, Forward forward) {
        return (checkpoint, config, backend, threads) -> new io.moe4j.model.linear.LinearFactory() {
            final UnquantizedLinears inner = new UnquantizedLinears(checkpoint, null);

            @Override
            public io.moe4j.model.linear.Linear load(String name, int in, int out, boolean bias) {
                io.moe4j.model.linear.Linear l = inner.load(name, in, out, bias);
                if (!name.equals(module)) {
                    return l;
                }
                return new io.moe4j.model.linear.Linear() {
                    public int inFeatures() {
                        return in;
                    }

                    public int outFeatures() {
                        return out;
                    }

                    public void forward(float[] x, int tokens, float[] y) {
                        forward.run(l, x, tokens, y);
                    }

                    public long weightBytes() {
                        return l.weightBytes();
                    }

                    public String describe() {
                        return describe;
                    }
                };
            }
        };
    }
}

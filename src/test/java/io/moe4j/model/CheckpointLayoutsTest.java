package io.moe4j.model;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.SafetensorsWriter;
import io.moe4j.safetensors.Tensor;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.function.UnaryOperator;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checkpoints as users have them: sharded with an index, f32 tensors, a multimodal Llama-4 with its text model
 * nested under {@code language_model.}, and a tied lm_head. Each is a rewrite of a fixture whose logits are known.
 */
class CheckpointLayoutsTest {
    static final ObjectMapper JSON = new ObjectMapper();

    static ModelOptions options() {
        return ModelOptions.defaults().withBackend("emulation").withThreads(1);
    }

    static float[] logits(Path dir, int[] ids) {
        try (Model model = Model.load(dir, options()); Session session = model.newSession()) {
            return session.prefill(ids);
        }
    }

    /** Writes every tensor of {@code src}, renamed, into {@code out}; bf16 widened to f32 when asked (exact). */
    static void copyTensors(Path src, Path out, UnaryOperator<String> rename, boolean toF32, String skip) {
        try (SafetensorsFile f = SafetensorsFile.open(src)) {
            SafetensorsWriter w = new SafetensorsWriter();
            for (String n : f.tensors().keySet()) {
                if (n.equals(skip)) {
                    continue;
                }
                Tensor t = f.tensor(n);
                if (toF32 && t.dtype() == DType.BF16) {
                    w.addF32(rename.apply(n), t.shape(), t.toFloatArray());
                } else {
                    w.add(rename.apply(n), t.dtype(), t.shape(), t.segment());
                }
            }
            w.write(out);
        }
    }

    @Test
    void aShardedCheckpointWithItsIndexGivesTheSameLogits(@TempDir Path tmp) throws IOException {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16");
        Files.copy(c.dir().resolve("config.json"), tmp.resolve("config.json"));
        ObjectNode index = JSON.createObjectNode();
        ObjectNode map = index.putObject("weight_map");
        try (SafetensorsFile f = SafetensorsFile.open(c.dir().resolve("model.safetensors"))) {
            SafetensorsWriter first = new SafetensorsWriter();
            SafetensorsWriter second = new SafetensorsWriter();
            for (String n : f.tensors().keySet()) {
                Tensor t = f.tensor(n);
                boolean early = n.startsWith("model.layers.0.") || n.startsWith("model.layers.1.") || n.startsWith("model.embed");
                String shard = early ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
                (early ? first : second).add(n, t.dtype(), t.shape(), t.segment());
                map.put(n, shard);
            }
            first.write(tmp.resolve("model-00001-of-00002.safetensors"));
            second.write(tmp.resolve("model-00002-of-00002.safetensors"));
        }
        JSON.writeValue(tmp.resolve(Checkpoint.INDEX_FILE).toFile(), index);
        assertThat(relL2(logits(tmp, c.inputIds()), c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
    }

    @Test
    void f32TensorsGiveTheSameLogitsAsTheirBf16Source(@TempDir Path tmp) throws IOException {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16");
        Files.copy(c.dir().resolve("config.json"), tmp.resolve("config.json"));
        copyTensors(c.dir().resolve("model.safetensors"), tmp.resolve("model.safetensors"), n -> n, true, null);
        assertThat(relL2(logits(tmp, c.inputIds()), c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
    }

    @Test
    void aMultimodalLlama4RunsItsNestedTextModel(@TempDir Path tmp) throws IOException {
        ModelCases.Case c = ModelCases.load("m_llama4_bf16");
        ObjectNode text = (ObjectNode) JSON.readTree(c.dir().resolve("config.json").toFile());
        ObjectNode root = JSON.createObjectNode();
        root.put("model_type", "llama4");
        root.putArray("architectures").add("Llama4ForConditionalGeneration");
        root.set("text_config", text);
        root.putObject("vision_config").put("hidden_size", 16);
        JSON.writeValue(tmp.resolve("config.json").toFile(), root);
        copyTensors(c.dir().resolve("model.safetensors"), tmp.resolve("model.safetensors"),
                n -> "language_model." + n, false, null);
        try (Model model = Model.load(tmp, options()); Session session = model.newSession()) {
            assertThat(model.config().modelPrefix()).isEqualTo("language_model.model.");
            assertThat(relL2(session.prefill(c.inputIds()), c.logits())).isLessThanOrEqualTo(c.tolerance("emulation"));
        }
    }

    /**
     * A tied model has no lm_head tensor: with embed_tokens set to the fixture's lm_head and tie_word_embeddings,
     * the logits equal those of the same untied model (not the fixture's: the embedding differs).
     */
    @Test
    void aTiedLmHeadReadsTheEmbedding(@TempDir Path tmp) throws IOException {
        ModelCases.Case c = ModelCases.load("m_gptoss_mxfp4");
        Path untied = Files.createDirectory(tmp.resolve("untied"));
        Path tied = Files.createDirectory(tmp.resolve("tied"));
        Files.copy(c.dir().resolve("config.json"), untied.resolve("config.json"));
        ObjectNode config = (ObjectNode) JSON.readTree(c.dir().resolve("config.json").toFile());
        config.put("tie_word_embeddings", true);
        JSON.writeValue(tied.resolve("config.json").toFile(), config);
        try (SafetensorsFile f = SafetensorsFile.open(c.dir().resolve("model.safetensors"))) {
            Tensor head = f.tensor("lm_head.weight");
            SafetensorsWriter u = new SafetensorsWriter();
            SafetensorsWriter t = new SafetensorsWriter();
            for (String n : f.tensors().keySet()) {
                Tensor x = n.equals("model.embed_tokens.weight") ? head : f.tensor(n);
                u.add(n, x.dtype(), x.shape(), x.segment());
                if (!n.equals("lm_head.weight")) {
                    t.add(n, x.dtype(), x.shape(), x.segment());
                }
            }
            u.write(untied.resolve("model.safetensors"));
            t.write(tied.resolve("model.safetensors"));
        }
        float[] want = logits(untied, c.inputIds());
        // the untied head may run through another linear implementation: equal up to float rounding
        assertThat(relL2(logits(tied, c.inputIds()), want)).isLessThan(1e-5);
    }
}

package io.moe4j.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * RoPE inverse frequencies and attention factors against transformers. {@code rope-transformers.json} holds, per
 * config, what transformers 5.18's {@code ROPE_INIT_FUNCTIONS} (float32) returned for it: YaRN with and without
 * {@code truncate}, with {@code attention_factor}, with {@code mscale}/{@code mscale_all_dim}, llama3 (Llama-3.1 and
 * Llama-4 Scout parameters), linear and default; long-context settings the whole-model fixtures do not reach.
 */
class RopeTest {
    static final ObjectMapper JSON = new ObjectMapper();

    static List<JsonNode> cases() throws IOException {
        try (InputStream in = RopeTest.class.getResourceAsStream("/model/rope-transformers.json")) {
            List<JsonNode> out = new ArrayList<>();
            JSON.readTree(in).forEach(out::add);
            return out;
        }
    }

    @ParameterizedTest(name = "{index}")
    @MethodSource("cases")
    void inverseFrequenciesAndAttentionFactorMatchTransformers(JsonNode c) {
        JsonNode config = c.get("config");
        Rope rope = Rope.of(config, c.get("dim").asInt(), config.get("max_position_embeddings").asInt(), false,
                c.get("name").asText());
        JsonNode want = c.get("inv_freq");
        assertThat(rope.invFreq()).hasSize(want.size());
        for (int i = 0; i < want.size(); i++) {
            double w = want.get(i).asDouble();
            assertThat(Math.abs(rope.invFreq()[i] - w) / w).as("%s inv_freq[%d]", c.get("name").asText(), i)
                    .isLessThan(5e-7);
        }
        assertThat((double) rope.attentionFactor()).as("%s attention factor", c.get("name").asText())
                .isCloseTo(c.get("attention_factor").asDouble(), org.assertj.core.data.Percentage.withPercentage(1e-4));
    }

    @Test
    void halvesAndInterleavedPairsRotateTheSameAnglesOnDifferentPairs() {
        Rope halves = new Rope(new float[] {1f, 0.5f}, 1f, false);
        Rope pairs = new Rope(new float[] {1f, 0.5f}, 1f, true);
        float[] h = {1, 2, 3, 4};
        float[] p = {1, 3, 2, 4}; // the same pairs, laid out (x0, x2), (x1, x3)
        halves.rotate(h, 0, 3);
        pairs.rotate(p, 0, 3);
        assertThat(new float[] {p[0], p[2], p[1], p[3]}).containsExactly(h);
        double before = 1 + 4 + 9 + 16;
        double after = h[0] * h[0] + h[1] * h[1] + h[2] * h[2] + h[3] * h[3];
        assertThat(after).isCloseTo(before, org.assertj.core.data.Offset.offset(1e-5));
    }

    @Test
    void aRopeScalingWithoutItsFactorIsNamed() {
        ObjectNode config = JSON.createObjectNode();
        config.put("rope_theta", 10000);
        config.putObject("rope_scaling").put("rope_type", "llama3");
        assertThatThrownBy(() -> Rope.of(config, 64, 4096, false, "cfg.json")).isInstanceOf(MoeException.class)
                .hasMessageContaining("cfg.json").hasMessageContaining("'factor'");
    }
}

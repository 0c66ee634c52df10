package io.moe4j.quant.method;

import com.fasterxml.jackson.databind.JsonNode;

/**
 * One Quark {@code QuantizationSpec} (the {@code weight} or {@code input_tensors} entry of a layer's config), as far
 * as MoE methods read it.
 *
 * @param dtype       {@code fp4}, {@code fp6_e3m2}, {@code fp6_e2m3}, {@code fp8_e4m3}, {@code int8} ...
 * @param qscheme     {@code per_tensor}, {@code per_channel} or {@code per_group}; null when absent
 * @param groupSize   group size of per_group specs, or null
 * @param scaleFormat {@code e8m0} for OCP MX, or null
 * @param dynamic     {@code is_dynamic}
 * @param symmetric   {@code symmetric}, or null when absent (MX specs)
 * @param json        the spec as written, for messages
 */
public record QuarkQuantSpec(String dtype, String qscheme, Integer groupSize, String scaleFormat, boolean dynamic,
                             Boolean symmetric, JsonNode json) {

    /** The spec of a JSON object, or null for an absent or null entry. */
    public static QuarkQuantSpec of(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return null;
        }
        return new QuarkQuantSpec(text(node, "dtype"), text(node, "qscheme"),
                node.hasNonNull("group_size") ? node.get("group_size").asInt() : null,
                text(node, "scale_format"), node.path("is_dynamic").asBoolean(false),
                node.hasNonNull("symmetric") ? node.get("symmetric").asBoolean() : null, node);
    }

    /** A spec with just the fields that decide a scheme (for tests and programmatic configs). */
    public static QuarkQuantSpec of(String dtype, String qscheme, Integer groupSize, String scaleFormat,
                                    boolean dynamic, Boolean symmetric) {
        return new QuarkQuantSpec(dtype, qscheme, groupSize, scaleFormat, dynamic, symmetric, null);
    }

    private static String text(JsonNode node, String key) {
        JsonNode v = node.get(key);
        return v == null || v.isNull() ? null : v.asText();
    }

    @Override
    public String toString() {
        return json != null ? json.toString()
                : "{dtype=" + dtype + ", qscheme=" + qscheme + ", group_size=" + groupSize + ", scale_format="
                + scaleFormat + ", is_dynamic=" + dynamic + ", symmetric=" + symmetric + "}";
    }
}

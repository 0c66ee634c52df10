package io.moe4j.quant.method;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.Locale;

/**
 * compressed-tensors {@code QuantizationArgs} (the {@code weights} or {@code input_activations} of a config group),
 * with its defaults and strategy inference applied.
 *
 * @param numBits        {@code num_bits}
 * @param type           {@code int} or {@code float}
 * @param symmetric      {@code symmetric}
 * @param groupSize      {@code group_size}, or null
 * @param strategy       {@code tensor}, {@code channel}, {@code group}, {@code block}, {@code token},
 *                       {@code tensor_group}
 * @param blockStructure {@code [block_n, block_k]} of block strategy, or null
 * @param dynamic        {@code dynamic}: true, or {@code "local"} (NVFP4 activations), counts as dynamic
 * @param actorder       {@code group}, {@code weight} or {@code static}; null when none
 * @param json           the args as written, for messages
 */
public record CtQuantArgs(int numBits, String type, boolean symmetric, Integer groupSize, String strategy,
                          int[] blockStructure, boolean dynamic, String actorder, JsonNode json) {

    public static final String TENSOR = "tensor";
    public static final String CHANNEL = "channel";
    public static final String GROUP = "group";
    public static final String BLOCK = "block";
    public static final String TOKEN = "token";
    public static final String TENSOR_GROUP = "tensor_group";

    /** The args of a JSON object, or null for an absent or null entry. */
    public static CtQuantArgs of(JsonNode node) {
        if (node == null || node.isNull() || node.isMissingNode()) {
            return null;
        }
        int bits = node.path("num_bits").asInt(8);
        String type = node.path("type").asText("int").toLowerCase(Locale.ROOT);
        boolean symmetric = node.path("symmetric").asBoolean(true);
        Integer group = node.hasNonNull("group_size") ? node.get("group_size").asInt() : null;
        int[] block = null;
        JsonNode bs = node.get("block_structure");
        if (bs != null && bs.isArray() && bs.size() == 2) {
            block = new int[]{bs.get(0).asInt(), bs.get(1).asInt()};
        } else if (bs != null && bs.isTextual() && bs.asText().matches("\\d+x\\d+")) {
            String[] p = bs.asText().split("x");
            block = new int[]{Integer.parseInt(p[0]), Integer.parseInt(p[1])};
        }
        String strategy = node.hasNonNull("strategy") ? node.get("strategy").asText().toLowerCase(Locale.ROOT) : null;
        if (strategy == null) {
            // compressed-tensors' validator: a group size means group, a block structure block, else tensor.
            strategy = group != null && group > 0 ? GROUP : block != null ? BLOCK : TENSOR;
        }
        JsonNode dyn = node.get("dynamic");
        boolean dynamic = dyn != null && (dyn.isBoolean() ? dyn.asBoolean() : dyn.isTextual() && !dyn.asText().isEmpty()
                && !dyn.asText().equalsIgnoreCase("false"));
        String actorder = null;
        JsonNode ao = node.get("actorder");
        if (ao != null && !ao.isNull()) {
            if (ao.isBoolean()) {
                actorder = ao.asBoolean() ? GROUP : null;
            } else {
                actorder = ao.asText().toLowerCase(Locale.ROOT);
            }
        }
        return new CtQuantArgs(bits, type, symmetric, group, strategy, block, dynamic, actorder, node);
    }

    public boolean isFloat() {
        return "float".equals(type);
    }

    public boolean isInt() {
        return "int".equals(type);
    }

    /** NVFP4: 4-bit float, tensor_group strategy, groups of 16, symmetric. */
    public boolean isNvfp4() {
        return numBits == 4 && isFloat() && TENSOR_GROUP.equals(strategy) && groupSize != null && groupSize == 16
                && symmetric;
    }

    @Override
    public String toString() {
        return json != null ? json.toString()
                : "{num_bits=" + numBits + ", type=" + type + ", symmetric=" + symmetric + ", group_size=" + groupSize
                + ", strategy=" + strategy + ", dynamic=" + dynamic + ", actorder=" + actorder + "}";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CtQuantArgs a && numBits == a.numBits && type.equals(a.type) && symmetric == a.symmetric
                && java.util.Objects.equals(groupSize, a.groupSize) && strategy.equals(a.strategy)
                && java.util.Arrays.equals(blockStructure, a.blockStructure) && dynamic == a.dynamic
                && java.util.Objects.equals(actorder, a.actorder);
    }

    @Override
    public int hashCode() {
        return java.util.Objects.hash(numBits, type, symmetric, groupSize, strategy, dynamic, actorder)
                + java.util.Arrays.hashCode(blockStructure);
    }

    /** Programmatic args (tests, configs built in code). */
    public static CtQuantArgs of(int numBits, String type, boolean symmetric, Integer groupSize, String strategy,
                                 boolean dynamic) {
        return new CtQuantArgs(numBits, type, symmetric, groupSize, strategy, null, dynamic, null, null);
    }
}

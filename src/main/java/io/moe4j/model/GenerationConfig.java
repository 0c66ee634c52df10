package io.moe4j.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A checkpoint's {@code generation_config.json}: the ids that end a sequence and the sampling defaults its authors
 * chose. Where the file is absent or silent, the token ids come from {@code config.json} (its {@code text_config}
 * for a multimodal Llama-4); a sampling field the file does not set is null, for the caller's own default.
 *
 * @param eosTokenIds  every id that ends generation (an int or a list in the files), possibly empty
 * @param doSample     whether the authors sample ({@code do_sample}; false when unset, as transformers defaults)
 */
public record GenerationConfig(List<Integer> eosTokenIds, Integer bosTokenId, Integer padTokenId, boolean doSample,
                               Double temperature, Integer topK, Double topP, Double minP, Double repetitionPenalty,
                               Integer maxNewTokens) {

    public static final String FILE = "generation_config.json";

    public GenerationConfig {
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /** Reads {@code dir/generation_config.json} if present, falling back on {@code dir/config.json} for token ids. */
    public static GenerationConfig load(Path dir) {
        JsonNode gen = read(dir.resolve(FILE));
        JsonNode config = read(dir.resolve("config.json"));
        if (config != null && config.has("text_config")) {
            config = config.get("text_config");
        }
        JsonNode empty = new ObjectMapper().createObjectNode();
        JsonNode g = gen == null ? empty : gen;
        JsonNode c = config == null ? empty : config;
        String where = dir.resolve(gen != null && g.has("eos_token_id") ? FILE : "config.json").toString();
        List<Integer> eos = ids(g.has("eos_token_id") ? g.get("eos_token_id") : c.path("eos_token_id"), where);
        return new GenerationConfig(eos,
                integer(g, c, "bos_token_id", dir), integer(g, c, "pad_token_id", dir),
                g.path("do_sample").asBoolean(false),
                number(g, "temperature", dir), integer(g, empty, "top_k", dir), number(g, "top_p", dir),
                number(g, "min_p", dir), number(g, "repetition_penalty", dir), integer(g, empty, "max_new_tokens", dir));
    }

    private static JsonNode read(Path file) {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            JsonNode n = new ObjectMapper().readTree(file.toFile());
            if (n == null || !n.isObject()) {
                throw new MoeException(file + ": not a JSON object");
            }
            return n;
        } catch (IOException e) {
            throw new MoeException(file + ": not valid JSON: " + io.moe4j.config.JsonErrors.describe(e));
        }
    }

    private static List<Integer> ids(JsonNode n, String where) {
        List<Integer> out = new ArrayList<>();
        if (n.isMissingNode() || n.isNull()) {
            return out;
        }
        if (n.canConvertToInt() && n.isIntegralNumber()) {
            out.add(n.asInt());
            return out;
        }
        if (n.isArray()) {
            for (JsonNode e : n) {
                if (!e.isIntegralNumber() || !e.canConvertToInt()) {
                    throw new MoeException(where + ": eos_token_id holds " + e + ", not a token id");
                }
                out.add(e.asInt());
            }
            return out;
        }
        throw new MoeException(where + ": eos_token_id is " + n + "; expected a token id or a list of them");
    }

    private static Integer integer(JsonNode primary, JsonNode fallback, String key, Path dir) {
        JsonNode n = primary.has(key) ? primary.get(key) : fallback.path(key);
        if (n.isMissingNode() || n.isNull()) {
            return null;
        }
        if (!n.isIntegralNumber() || !n.canConvertToInt()) {
            throw new MoeException(dir.resolve(primary.has(key) ? FILE : "config.json") + ": '" + key + "' is " + n
                    + "; expected an integer");
        }
        return n.asInt();
    }

    private static Double number(JsonNode g, String key, Path dir) {
        JsonNode n = g.path(key);
        if (n.isMissingNode() || n.isNull()) {
            return null;
        }
        if (!n.isNumber()) {
            throw new MoeException(dir.resolve(FILE) + ": '" + key + "' is " + n + "; expected a number");
        }
        return n.asDouble();
    }
}

package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.GZIPInputStream;

/**
 * Reads tokenizer.json and tokenizer_config.json into a {@link Tokenizer}.
 *
 * <p>The vocabulary and merges (hundreds of thousands of entries) are read with Jackson's streaming parser straight
 * into their tables; the small sections (normalizer, pre-tokenizer, decoder, added tokens) as trees. The
 * post-processor is not read: it only adds special tokens around an encoding, which {@link Tokenizer#encode} never
 * does. The normalizer, pre-tokenizer and decoder are built by {@link PipelineReader}.
 */
final class TokenizerLoader {
    private static final ObjectMapper JSON = new ObjectMapper();
    /**
     * Field names are neither canonicalized nor interned: the vocabulary's hundreds of thousands of keys are each
     * seen once, and putting them through Jackson's symbol table and {@link String#intern} would only cost time.
     */
    private static final JsonFactory STREAMING = JsonFactory.builder()
            .disable(JsonFactory.Feature.CANONICALIZE_FIELD_NAMES)
            .disable(JsonFactory.Feature.INTERN_FIELD_NAMES)
            .build();

    private final Path file;

    private TokenizerLoader(Path file) {
        this.file = file;
    }

    static Tokenizer load(Path modelDir) {
        Path json;
        Path dir;
        if (Files.isRegularFile(modelDir)) {
            json = modelDir;
            dir = modelDir.toAbsolutePath().getParent();
        } else {
            dir = modelDir;
            json = modelDir.resolve("tokenizer.json");
            if (!Files.isRegularFile(json)) {
                json = modelDir.resolve("tokenizer.json.gz");
            }
            if (!Files.isRegularFile(json)) {
                throw new MoeException(modelDir + ": no tokenizer.json (nor tokenizer.json.gz) in this directory");
            }
        }
        Path config = dir == null ? null : dir.resolve("tokenizer_config.json");
        return new TokenizerLoader(json).read(config != null && Files.isRegularFile(config) ? config : null);
    }

    private MoeException fail(String key, String problem) {
        return new MoeException(file + ": " + key + ": " + problem);
    }

    /** What the streaming pass collects. */
    private static final class Parts {
        final Map<String, JsonNode> sections = new HashMap<>();
        final Map<String, JsonNode> modelFields = new HashMap<>();
        Map<String, Integer> vocab;
        List<String> mergeLeft;
        List<String> mergeRight;
        boolean sawModel;
    }

    private Tokenizer read(Path configFile) {
        Parts parts = new Parts();
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16);
             InputStream in = file.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw;
             JsonParser p = STREAMING.createParser(in)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw fail("(root)", "not a JSON object");
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                p.nextToken();
                if (name.equals("model")) {
                    readModel(p, parts);
                } else {
                    parts.sections.put(name, JSON.readTree(p));
                }
            }
        } catch (JsonProcessingException e) {
            throw new MoeException(file + ": does not parse as JSON: " + io.moe4j.config.JsonErrors.describe(e), e);
        } catch (IOException e) {
            throw new MoeException(file + ": cannot read: " + e.getMessage(), e);
        }
        if (!parts.sawModel) {
            throw fail("model", "missing");
        }
        JsonNode config = configFile == null ? null : readConfig(configFile);

        BpeModel model = model(parts);
        List<AddedToken> added = inVocabularyIds(addedTokens(parts.sections.get("added_tokens"), config), parts.vocab);
        PipelineReader pipeline = new PipelineReader(file);
        TextNormalizer normalizer = pipeline.normalizer(parts.sections.get("normalizer"), "normalizer");
        PreTokenizer preTokenizer = pipeline.preTokenizer(parts.sections.get("pre_tokenizer"), "pre_tokenizer");

        int size = 0;
        for (int id : parts.vocab.values()) {
            size = Math.max(size, id + 1);
        }
        for (AddedToken t : added) {
            size = Math.max(size, t.id() + 1);
        }
        String[] tokens = new String[size];
        parts.vocab.forEach((token, id) -> tokens[id] = token);
        for (AddedToken t : added) {
            tokens[t.id()] = t.content();
        }
        // A normalized added token decodes from its normalized form, as the reference does.
        String[] decoded = tokens.clone();
        for (AddedToken t : added) {
            if (t.normalized()) {
                decoded[t.id()] = normalizer.normalize(t.content());
            }
        }
        boolean[] special = new boolean[size];
        for (AddedToken t : added) {
            special[t.id()] = t.special();
        }
        Decoding decoding = pipeline.decoder(parts.sections.get("decoder"), decoded, special);
        String bos = config == null ? null : specialTokenName(config, "bos_token", configFile);
        String eos = config == null ? null : specialTokenName(config, "eos_token", configFile);
        Tokenizer tokenizer = new Tokenizer(file.toString(), normalizer, preTokenizer, model, added, tokens, special,
                decoding, bos, eos, flag(config, "add_bos_token", configFile), flag(config, "add_eos_token", configFile));
        if (flag(config, "add_bos_token", configFile) && tokenizer.bosId().isEmpty()) {
            throw new MoeException(configFile + ": add_bos_token is true but there is no bos_token");
        }
        if (flag(config, "add_eos_token", configFile) && tokenizer.eosId().isEmpty()) {
            throw new MoeException(configFile + ": add_eos_token is true but there is no eos_token");
        }
        if (bos != null && tokenizer.bosId().isEmpty()) {
            throw new MoeException(configFile + ": bos_token: \"" + bos + "\" is no token of " + file);
        }
        if (eos != null && tokenizer.eosId().isEmpty()) {
            throw new MoeException(configFile + ": eos_token: \"" + eos + "\" is no token of " + file);
        }
        return tokenizer;
    }

    private void readModel(JsonParser p, Parts parts) throws IOException {
        if (p.currentToken() != JsonToken.START_OBJECT) {
            throw fail("model", "not an object");
        }
        parts.sawModel = true;
        while (p.nextToken() == JsonToken.FIELD_NAME) {
            String name = p.currentName();
            JsonToken value = p.nextToken();
            if (name.equals("vocab") && value == JsonToken.START_OBJECT) {
                Map<String, Integer> vocab = new HashMap<>(1 << 18);
                while (p.nextToken() == JsonToken.FIELD_NAME) {
                    String token = p.currentName();
                    if (p.nextToken() != JsonToken.VALUE_NUMBER_INT || p.getLongValue() < 0
                            || p.getLongValue() > Integer.MAX_VALUE - 1) {
                        throw fail("model.vocab", "the id of \"" + token + "\" is not a non-negative integer");
                    }
                    vocab.put(token, p.getIntValue());
                }
                parts.vocab = vocab;
            } else if (name.equals("merges") && value == JsonToken.START_ARRAY) {
                readMerges(p, parts);
            } else {
                parts.modelFields.put(name, JSON.readTree(p));
            }
        }
    }

    /** Merges as "a b" strings (the older form) or as [a, b] pairs. */
    private void readMerges(JsonParser p, Parts parts) throws IOException {
        List<String> left = new ArrayList<>(1 << 18);
        List<String> right = new ArrayList<>(1 << 18);
        JsonToken t;
        while ((t = p.nextToken()) != JsonToken.END_ARRAY) {
            int index = left.size();
            if (t == JsonToken.VALUE_STRING) {
                String line = p.getText();
                if (line.startsWith("#version")) {
                    continue;
                }
                int space = line.indexOf(' ');
                if (space < 0 || line.indexOf(' ', space + 1) >= 0) {
                    throw fail("model.merges[" + index + "]", "\"" + line + "\" is not two tokens separated by a space");
                }
                left.add(line.substring(0, space));
                right.add(line.substring(space + 1));
            } else if (t == JsonToken.START_ARRAY) {
                String a = p.nextToken() == JsonToken.VALUE_STRING ? p.getText() : null;
                String b = a != null && p.nextToken() == JsonToken.VALUE_STRING ? p.getText() : null;
                if (b == null || p.nextToken() != JsonToken.END_ARRAY) {
                    throw fail("model.merges[" + index + "]", "not a pair of two token strings");
                }
                left.add(a);
                right.add(b);
            } else {
                throw fail("model.merges[" + index + "]", "neither a \"a b\" string nor a [a, b] pair");
            }
        }
        parts.mergeLeft = left;
        parts.mergeRight = right;
    }

    private BpeModel model(Parts parts) {
        Map<String, JsonNode> f = parts.modelFields;
        JsonNode typeNode = f.get("type");
        String type = typeNode == null ? (parts.mergeLeft != null ? "BPE" : "") : typeNode.asText();
        if (!type.equals("BPE")) {
            throw fail("model.type", "unsupported model \"" + type + "\" (supported: BPE)");
        }
        if (parts.vocab == null) {
            throw fail("model.vocab", "missing or not an object");
        }
        if (parts.mergeLeft == null) {
            throw fail("model.merges", "missing or not an array");
        }
        JsonNode dropout = f.get("dropout");
        if (dropout != null && !dropout.isNull() && dropout.asDouble() != 0.0) {
            throw fail("model.dropout", "BPE dropout " + dropout + " is for training; inference needs none");
        }
        String prefix = text(f, "continuing_subword_prefix");
        String suffix = text(f, "end_of_word_suffix");
        Map<String, Integer> vocab = parts.vocab;
        int prefixLength = prefix == null ? 0 : prefix.length();
        MergeTable merges = new MergeTable(parts.mergeLeft.size());
        for (int rank = 0; rank < parts.mergeLeft.size(); rank++) {
            String a = parts.mergeLeft.get(rank);
            String b = parts.mergeRight.get(rank);
            Integer ia = vocab.get(a);
            Integer ib = vocab.get(b);
            if (ia == null || ib == null) {
                throw fail("model.merges[" + rank + "]", "\"" + (ia == null ? a : b) + "\" is not in the vocabulary");
            }
            // The merged token drops the continuation prefix of its right half ("##").
            String merged = a + (prefixLength > 0 && b.startsWith(prefix) ? b.substring(prefixLength) : b);
            Integer im = vocab.get(merged);
            if (im == null) {
                throw fail("model.merges[" + rank + "]", "the merged token \"" + merged + "\" is not in the vocabulary");
            }
            merges.put(ia, ib, rank, im);
        }
        String unk = text(f, "unk_token");
        int unkId = -1;
        if (unk != null) {
            Integer id = vocab.get(unk);
            if (id == null) {
                throw fail("model.unk_token", "\"" + unk + "\" is not in the vocabulary");
            }
            unkId = id;
        }
        return new BpeModel(vocab, merges, bool(f, "ignore_merges"), bool(f, "byte_fallback"), unkId,
                bool(f, "fuse_unk"), prefix, suffix);
    }

    private static String text(Map<String, JsonNode> fields, String key) {
        JsonNode n = fields.get(key);
        return n == null || n.isNull() ? null : n.asText();
    }

    private static boolean bool(Map<String, JsonNode> fields, String key) {
        JsonNode n = fields.get(key);
        return n != null && n.asBoolean(false);
    }

    private List<AddedToken> addedTokens(JsonNode list, JsonNode config) {
        Map<Integer, AddedToken> byId = new LinkedHashMap<>();
        if (list != null && !list.isNull()) {
            if (!list.isArray()) {
                throw fail("added_tokens", "not an array");
            }
            for (int i = 0; i < list.size(); i++) {
                AddedToken t = addedToken(list.get(i), list.get(i).path("id"), "added_tokens[" + i + "]", file);
                byId.put(t.id(), t);
            }
        }
        // tokenizer_config.json may list added tokens the tokenizer.json lacks; transformers adds them.
        JsonNode decoder = config == null ? null : config.get("added_tokens_decoder");
        if (decoder != null && decoder.isObject()) {
            for (Map.Entry<String, JsonNode> e : decoder.properties()) {
                int id;
                try {
                    id = Integer.parseInt(e.getKey());
                } catch (NumberFormatException ex) {
                    throw new MoeException(file.resolveSibling("tokenizer_config.json") + ": added_tokens_decoder: key \""
                            + e.getKey() + "\" is not an id");
                }
                if (!byId.containsKey(id)) {
                    byId.put(id, addedToken(e.getValue(), JSON.getNodeFactory().numberNode(id),
                            "added_tokens_decoder." + id, file.resolveSibling("tokenizer_config.json")));
                }
            }
        }
        return List.copyOf(byId.values());
    }

    /**
     * An added token whose content the model's vocabulary already holds takes the vocabulary's id, whatever the file
     * says: the reference assigns ids that way when it loads added tokens (and only warns about the mismatch).
     */
    private static List<AddedToken> inVocabularyIds(List<AddedToken> added, Map<String, Integer> vocab) {
        List<AddedToken> out = new ArrayList<>(added.size());
        for (AddedToken t : added) {
            Integer id = vocab.get(t.content());
            out.add(id == null || id == t.id() ? t : new AddedToken(id, t.content(), t.special(), t.singleWord(),
                    t.lstrip(), t.rstrip(), t.normalized()));
        }
        return List.copyOf(out);
    }

    private static AddedToken addedToken(JsonNode t, JsonNode idNode, String key, Path where) {
        JsonNode content = t.get("content");
        if (!idNode.canConvertToInt() || idNode.asInt() < 0 || content == null || !content.isTextual()
                || content.asText().isEmpty()) {
            throw new MoeException(where + ": " + key + ": needs a non-negative \"id\" and a non-empty \"content\"");
        }
        boolean special = t.path("special").asBoolean(false);
        return new AddedToken(idNode.asInt(), content.asText(), special, t.path("single_word").asBoolean(false),
                t.path("lstrip").asBoolean(false), t.path("rstrip").asBoolean(false),
                t.path("normalized").asBoolean(!special));
    }

    private static JsonNode readConfig(Path configFile) {
        try {
            JsonNode root = JSON.readTree(configFile.toFile());
            if (root == null || !root.isObject()) {
                throw new MoeException(configFile + ": not a JSON object");
            }
            return root;
        } catch (JsonProcessingException e) {
            throw new MoeException(configFile + ": does not parse as JSON: " + io.moe4j.config.JsonErrors.describe(e), e);
        } catch (IOException e) {
            throw new MoeException(configFile + ": cannot read: " + e.getMessage(), e);
        }
    }

    /** A special-token entry of tokenizer_config.json: a string, an AddedToken object, or null. */
    /** A boolean of tokenizer_config.json (absent or null: false). */
    private static boolean flag(JsonNode config, String key, Path configFile) {
        JsonNode v = config == null ? null : config.get(key);
        if (v == null || v.isNull()) {
            return false;
        }
        if (!v.isBoolean()) {
            throw new MoeException(configFile + ": " + key + ": expected true or false, got " + v);
        }
        return v.booleanValue();
    }

    private static String specialTokenName(JsonNode config, String key, Path configFile) {
        JsonNode n = config.get(key);
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isTextual()) {
            return n.asText();
        }
        if (n.isObject() && n.path("content").isTextual()) {
            return n.get("content").asText();
        }
        throw new MoeException(configFile + ": " + key + ": neither a string nor an object with \"content\"");
    }
}

package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Builds the text pipeline of a tokenizer.json from its small sections: the {@code normalizer}, the
 * {@code pre_tokenizer} and the {@code decoder}. Anything it does not implement is refused with an error naming the
 * file and the key, e.g. {@code pre_tokenizer.pretokenizers[0].type}.
 */
final class PipelineReader {
    /** What the decoder gives per token id (null where no token has the id), and what it puts between tokens. */
    record TokenBytes(byte[][] bytes, byte[] separator) {
    }

    private final Path file;

    PipelineReader(Path file) {
        this.file = file;
    }

    private MoeException fail(String key, String problem) {
        return new MoeException(file + ": " + key + ": " + problem);
    }

    /** The bytes each token decodes to, from the {@code decoder} section (ByteLevel, or none). */
    TokenBytes decoder(JsonNode decoder, String[] tokens) {
        byte[][] bytes = new byte[tokens.length][];
        if (decoder == null || decoder.isNull()) {
            // Without a decoder the reference joins the tokens with spaces.
            for (int id = 0; id < tokens.length; id++) {
                bytes[id] = tokens[id] == null ? null : tokens[id].getBytes(StandardCharsets.UTF_8);
            }
            return new TokenBytes(bytes, new byte[] {' '});
        }
        String type = decoder.path("type").asText("");
        if (!type.equals("ByteLevel")) {
            throw fail("decoder.type", "unsupported decoder \"" + type + "\" (supported: ByteLevel)");
        }
        for (int id = 0; id < tokens.length; id++) {
            bytes[id] = tokens[id] == null ? null : ByteLevel.decode(tokens[id]);
        }
        return new TokenBytes(bytes, new byte[0]);
    }

    /** The normalizer of a {@code normalizer} section (null: none); {@code key} names it in errors. */
    TextNormalizer normalizer(JsonNode n, String key) {
        if (n == null || n.isNull()) {
            return TextNormalizer.IDENTITY;
        }
        String type = n.path("type").asText("");
        return switch (type) {
            case "NFC" -> new TextNormalizer.UnicodeForm(Normalizer.Form.NFC);
            case "NFD" -> new TextNormalizer.UnicodeForm(Normalizer.Form.NFD);
            case "NFKC" -> new TextNormalizer.UnicodeForm(Normalizer.Form.NFKC);
            case "NFKD" -> new TextNormalizer.UnicodeForm(Normalizer.Form.NFKD);
            case "Lowercase" -> new TextNormalizer.Lowercase();
            case "Sequence" -> {
                JsonNode steps = n.path("normalizers");
                if (!steps.isArray()) {
                    throw fail(key + ".normalizers", "missing or not an array");
                }
                List<TextNormalizer> list = new ArrayList<>();
                for (int i = 0; i < steps.size(); i++) {
                    list.add(normalizer(steps.get(i), key + ".normalizers[" + i + "]"));
                }
                yield new TextNormalizer.Steps(List.copyOf(list));
            }
            default -> throw fail(key + ".type", "unsupported normalizer \"" + type
                    + "\" (supported: NFC, NFD, NFKC, NFKD, Lowercase, Sequence)");
        };
    }

    /** The pre-tokenizer of a {@code pre_tokenizer} section, or null for none; {@code key} names it in errors. */
    PreTokenizer preTokenizer(JsonNode n, String key) {
        if (n == null || n.isNull()) {
            return null;
        }
        String type = n.path("type").asText("");
        return switch (type) {
            case "Sequence" -> {
                JsonNode steps = n.path("pretokenizers");
                if (!steps.isArray()) {
                    throw fail(key + ".pretokenizers", "missing or not an array");
                }
                List<PreTokenizer> list = new ArrayList<>();
                for (int i = 0; i < steps.size(); i++) {
                    list.add(preTokenizer(steps.get(i), key + ".pretokenizers[" + i + "]"));
                }
                yield new PreTokenizer.Steps(List.copyOf(list));
            }
            case "Split" -> split(n, key);
            case "ByteLevel" -> new PreTokenizer.ByteLevelStep(n.path("add_prefix_space").asBoolean(true),
                    n.path("use_regex").asBoolean(true));
            default -> throw fail(key + ".type", "unsupported pre-tokenizer \"" + type
                    + "\" (supported: Sequence, Split, ByteLevel)");
        };
    }

    private PreTokenizer split(JsonNode n, String key) {
        JsonNode pattern = n.path("pattern");
        Pattern compiled;
        if (pattern.has("Regex")) {
            String regex = pattern.get("Regex").asText();
            try {
                compiled = OnigPatterns.compile(regex);
            } catch (PatternSyntaxException e) {
                throw fail(key + ".pattern.Regex", "cannot compile /" + regex + "/: " + e.getDescription());
            }
        } else if (pattern.has("String")) {
            compiled = Pattern.compile(Pattern.quote(pattern.get("String").asText()));
        } else {
            throw fail(key + ".pattern", "needs a \"Regex\" or a \"String\"");
        }
        String behaviorName = n.path("behavior").asText("");
        SplitBehavior behavior = SplitBehavior.parse(behaviorName);
        if (behavior == null) {
            throw fail(key + ".behavior", "unknown split behavior \"" + behaviorName
                    + "\" (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
        }
        return new PreTokenizer.RegexSplit(compiled, behavior, n.path("invert").asBoolean(false));
    }
}

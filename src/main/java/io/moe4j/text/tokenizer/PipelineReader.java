package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.moe4j.MoeException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Builds the text pipeline of a tokenizer.json from its small sections: the {@code normalizer}, the
 * {@code pre_tokenizer} and the {@code decoder}. Anything it does not implement is refused with an error naming the
 * file and the key, e.g. {@code pre_tokenizer.pretokenizers[0].type}.
 */
final class PipelineReader {
    private final Path file;

    PipelineReader(Path file) {
        this.file = file;
    }

    private MoeException fail(String key, String problem) {
        return new MoeException(file + ": " + key + ": " + problem);
    }

    /**
     * The decoding of a {@code decoder} section: ByteLevel, none (tokens joined with spaces, as the reference does),
     * a Metaspace decoder, or the SentencePiece-style chain {@code (Replace|Metaspace)* ByteFallback? Fuse? Strip?}
     * in that order.
     *
     * @param tokens  per id, the token as the decoder sees it (null where no token has the id)
     * @param special per id, whether it is a special token
     */
    Decoding decoder(JsonNode decoder, String[] tokens, boolean[] special) {
        if (decoder == null || decoder.isNull()) {
            byte[][] bytes = new byte[tokens.length][];
            for (int id = 0; id < tokens.length; id++) {
                bytes[id] = tokens[id] == null ? null : tokens[id].getBytes(StandardCharsets.UTF_8);
            }
            return new ByteDecoding(bytes, new byte[] {' '}, special);
        }
        String type = decoder.path("type").asText("");
        if (type.equals("ByteLevel")) {
            byte[][] bytes = new byte[tokens.length][];
            for (int id = 0; id < tokens.length; id++) {
                bytes[id] = tokens[id] == null ? null : ByteLevel.decode(tokens[id]);
            }
            return new ByteDecoding(bytes, new byte[0], special);
        }
        if (type.equals("Sequence")) {
            return pieceChain(decoder.path("decoders"), "decoder.decoders", tokens, special);
        }
        if (type.equals("Metaspace")) {
            return pieceChain(JsonNodeFactory.instance.arrayNode().add(decoder), "decoder", tokens, special);
        }
        throw fail("decoder.type", "unsupported decoder \"" + type + "\" (supported: ByteLevel, Metaspace, Sequence "
                + "of Replace, Metaspace, ByteFallback, Fuse, Strip)");
    }

    private Decoding pieceChain(JsonNode steps, String stepsKey, String[] tokens, boolean[] special) {
        if (!steps.isArray()) {
            throw fail(stepsKey, "missing or not an array");
        }
        // Stage of the chain reached: 0 Replace/Metaspace, 1 ByteFallback, 2 Fuse, 3 Strip; each may appear once, in
        // order (stage 0 any number of times), which is the order under which streaming token by token is exact.
        int stage = 0;
        String[] pieces = tokens.clone();
        String[] firstPieces = null; // per id, the token as the first of a text, where that differs
        boolean byteFallback = false;
        boolean fused = false;
        int strip = 0;
        char stripChar = ' ';
        for (int i = 0; i < steps.size(); i++) {
            JsonNode step = steps.get(i);
            String key = stepsKey.equals("decoder") ? stepsKey : stepsKey + "[" + i + "]";
            String type = step.path("type").asText("");
            int at = switch (type) {
                case "Replace", "Metaspace" -> 0;
                case "ByteFallback" -> 1;
                case "Fuse" -> 2;
                case "Strip" -> 3;
                default -> throw fail(key + ".type", "unsupported decoder \"" + type
                        + "\" in a Sequence (supported: Replace, Metaspace, ByteFallback, Fuse, Strip)");
            };
            if (at < stage || (at == stage && at > 0)) {
                throw fail(key + ".type", type + " out of the order Replace/Metaspace, ByteFallback, Fuse, Strip");
            }
            stage = at;
            switch (type) {
                case "Replace" -> {
                    Pattern pattern = pattern(step.path("pattern"), key + ".pattern");
                    String content = step.path("content").asText("");
                    for (String[] list : firstPieces == null ? new String[][] {pieces} : new String[][] {pieces,
                        firstPieces}) {
                        for (int id = 0; id < list.length; id++) {
                            if (list[id] != null) {
                                list[id] = pattern.matcher(list[id]).replaceAll(Matcher.quoteReplacement(content));
                            }
                        }
                    }
                }
                case "Metaspace" -> {
                    // The mark becomes a space, except in the first token, which loses its marks altogether
                    // (the one the pre-tokenizer prepended), unless the prepend scheme is "never".
                    String mark = step.path("replacement").asText("\u2581");
                    String scheme = step.path("prepend_scheme").asText("always");
                    if (step.has("add_prefix_space") && !step.get("add_prefix_space").asBoolean()) {
                        scheme = "never";
                    }
                    if (!scheme.equals("never")) {
                        if (firstPieces == null) {
                            firstPieces = pieces.clone();
                        }
                        for (int id = 0; id < firstPieces.length; id++) {
                            if (firstPieces[id] != null) {
                                firstPieces[id] = firstPieces[id].replace(mark, "");
                            }
                        }
                    } else if (firstPieces != null) {
                        for (int id = 0; id < firstPieces.length; id++) {
                            if (firstPieces[id] != null) {
                                firstPieces[id] = firstPieces[id].replace(mark, " ");
                            }
                        }
                    }
                    for (int id = 0; id < pieces.length; id++) {
                        if (pieces[id] != null) {
                            pieces[id] = pieces[id].replace(mark, " ");
                        }
                    }
                }
                case "ByteFallback" -> byteFallback = true;
                case "Strip" -> {
                    if (!fused) {
                        // Before Fuse, Strip would cut every token, not the start of the text.
                        throw fail(key, "a Strip is supported only after a Fuse");
                    }
                    String content = step.path("content").asText(" ");
                    if (content.length() != 1 || step.path("stop").asInt(0) != 0) {
                        throw fail(key, "only a Strip of one character at the start is supported (got content \""
                                + content + "\", stop " + step.path("stop").asInt(0) + ")");
                    }
                    strip = step.path("start").asInt(0);
                    stripChar = content.charAt(0);
                }
                default -> fused = true; // Fuse: decode joins the pieces in any case
            }
        }
        int[] byteOf = new int[pieces.length];
        for (int id = 0; id < pieces.length; id++) {
            byteOf[id] = byteFallback && pieces[id] != null ? fallbackByte(pieces[id]) : -1;
        }
        if (firstPieces != null) {
            for (int id = 0; id < firstPieces.length; id++) {
                if (firstPieces[id] != null && firstPieces[id].equals(pieces[id])) {
                    firstPieces[id] = null;
                }
            }
        }
        return new PieceDecoding(pieces, firstPieces, byteOf, strip, stripChar, special);
    }

    /** The byte of a {@code <0xAB>} token, or -1 for any other token. */
    private static int fallbackByte(String token) {
        if (token.length() != 6 || !token.startsWith("<0x") || token.charAt(5) != '>') {
            return -1;
        }
        int hi = Character.digit(token.charAt(3), 16);
        int lo = Character.digit(token.charAt(4), 16);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }

    /** A {@code {"String": ...}} or {@code {"Regex": ...}} pattern of a Replace or Split. */
    private Pattern pattern(JsonNode pattern, String key) {
        if (pattern.has("Regex")) {
            String regex = pattern.get("Regex").asText();
            try {
                return OnigPatterns.compile(regex);
            } catch (PatternSyntaxException e) {
                throw fail(key + ".Regex", "cannot compile /" + regex + "/: " + e.getDescription());
            }
        }
        if (pattern.has("String")) {
            return Pattern.compile(Pattern.quote(pattern.get("String").asText()));
        }
        throw fail(key, "needs a \"Regex\" or a \"String\"");
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
            case "Prepend" -> new TextNormalizer.Prepend(n.path("prepend").asText(""));
            case "Replace" -> new TextNormalizer.Replace(pattern(n.path("pattern"), key + ".pattern"),
                    n.path("content").asText(""));
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
                    + "\" (supported: NFC, NFD, NFKC, NFKD, Lowercase, Prepend, Replace, Sequence)");
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
            case "Metaspace" -> metaspace(n, key);
            case "ByteLevel" -> new PreTokenizer.ByteLevelStep(n.path("add_prefix_space").asBoolean(true),
                    n.path("use_regex").asBoolean(true));
            default -> throw fail(key + ".type", "unsupported pre-tokenizer \"" + type
                    + "\" (supported: Sequence, Split, ByteLevel, Metaspace)");
        };
    }

    private PreTokenizer metaspace(JsonNode n, String key) {
        String replacement = n.path("replacement").asText("\u2581");
        if (replacement.length() != 1) {
            throw fail(key + ".replacement", "not one character: \"" + replacement + "\"");
        }
        String scheme = n.path("prepend_scheme").asText("always");
        if (!scheme.equals("always") && !scheme.equals("first") && !scheme.equals("never")) {
            throw fail(key + ".prepend_scheme", "unknown scheme \"" + scheme + "\" (always, first, never)");
        }
        if (n.has("add_prefix_space") && !n.get("add_prefix_space").asBoolean()) {
            scheme = "never"; // the older key; false means no mark is ever prepended
        }
        return new PreTokenizer.Metaspace(replacement.charAt(0), scheme, n.path("split").asBoolean(true));
    }

    private PreTokenizer split(JsonNode n, String key) {
        Pattern compiled = pattern(n.path("pattern"), key + ".pattern");
        String behaviorName = n.path("behavior").asText("");
        SplitBehavior behavior = SplitBehavior.parse(behaviorName);
        if (behavior == null) {
            throw fail(key + ".behavior", "unknown split behavior \"" + behaviorName
                    + "\" (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
        }
        return new PreTokenizer.RegexSplit(compiled, behavior, n.path("invert").asBoolean(false));
    }
}

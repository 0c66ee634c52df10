package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Small tokenizer.json files written by tests, whose answers can be worked out by hand: the vocabulary is the 256
 * byte symbols with id = byte value, plus the tokens the merges make, numbered from 256 in merge order.
 */
final class TinyTokenizers {
    static final ObjectMapper JSON = new ObjectMapper();

    private TinyTokenizers() {
    }

    /** A byte-level BPE tokenizer.json: no normalizer, a ByteLevel pre-tokenizer without regex, a ByteLevel decoder. */
    static ObjectNode byteLevel(String... merges) {
        ObjectNode root = JSON.createObjectNode();
        root.put("version", "1.0");
        root.putArray("added_tokens");
        root.putNull("normalizer");
        ObjectNode pre = root.putObject("pre_tokenizer");
        pre.put("type", "ByteLevel").put("add_prefix_space", false).put("trim_offsets", false).put("use_regex", false);
        root.putObject("decoder").put("type", "ByteLevel").put("add_prefix_space", false).put("trim_offsets", false)
                .put("use_regex", false);
        ObjectNode model = root.putObject("model");
        model.put("type", "BPE").putNull("dropout").putNull("unk_token").put("byte_fallback", false)
                .put("ignore_merges", false);
        ObjectNode vocab = model.putObject("vocab");
        for (int b = 0; b < 256; b++) {
            vocab.put(sym(String.valueOf((char) b)), b);
        }
        ArrayNode list = model.putArray("merges");
        int next = 256;
        for (String merge : merges) {
            String[] ab = merge.split(" ");
            list.addArray().add(sym(ab[0])).add(sym(ab[1]));
            String merged = sym(ab[0]) + sym(ab[1]);
            if (!vocab.has(merged)) {
                vocab.put(merged, next++);
            }
        }
        return root;
    }

    /** The byte-level symbols of ASCII/Latin-1 text (each char taken as one byte). */
    static String sym(String latin1) {
        StringBuilder out = new StringBuilder();
        for (char c : latin1.toCharArray()) {
            out.append(ByteLevel.encodeByte((byte) c));
        }
        return out.toString();
    }

    static ObjectNode addToken(ObjectNode root, int id, String content, boolean special, boolean singleWord,
                               boolean lstrip, boolean rstrip, boolean normalized) {
        ObjectNode t = ((ArrayNode) root.get("added_tokens")).addObject();
        t.put("id", id).put("content", content).put("single_word", singleWord).put("lstrip", lstrip)
                .put("rstrip", rstrip).put("normalized", normalized).put("special", special);
        return root;
    }

    static Path write(Path dir, ObjectNode root) {
        return write(dir, root.toString());
    }

    static Path write(Path dir, String tokenizerJson) {
        try {
            Files.writeString(dir.resolve("tokenizer.json"), tokenizerJson);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return dir;
    }
}

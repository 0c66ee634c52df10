package io.moe4j.generate.constraint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.GZIPInputStream;

/**
 * A byte-level BPE vocabulary read from a tokenizer.json(.gz), for tests: {@code model.vocab}'s keys are mapped back
 * from the byte-level alphabet (GPT-2's printable stand-ins for the 256 bytes) to bytes; added tokens are their
 * content in UTF-8, special as the file marks them.
 */
final class ByteLevelVocabulary implements TokenVocabulary {
    private final byte[][] bytes;
    private final boolean[] special;
    private final Map<String, Integer> added = new HashMap<>();

    private ByteLevelVocabulary(byte[][] bytes, boolean[] special) {
        this.bytes = bytes;
        this.special = special;
    }

    private static final Map<String, ByteLevelVocabulary> LOADED = new ConcurrentHashMap<>();
    private static final Map<String, TokenTrie> TRIES = new ConcurrentHashMap<>();

    /** The family's vocabulary, read once for all the tests of a run. */
    static ByteLevelVocabulary cached(String family) {
        return LOADED.computeIfAbsent(family, f -> {
            try {
                return load(f);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
    }

    /** The family's token trie, built once for all the tests of a run. */
    static TokenTrie cachedTrie(String family) {
        return TRIES.computeIfAbsent(family, f -> new TokenTrie(cached(f)));
    }

    static Path shared() {
        return Path.of(System.getProperty("moe4j.shared", "../shared"));
    }

    static ByteLevelVocabulary load(String family) throws IOException {
        Path file = shared().resolve("tokenizers").resolve(family).resolve("tokenizer.json.gz");
        JsonNode root;
        try (InputStream in = new GZIPInputStream(Files.newInputStream(file))) {
            root = new ObjectMapper().readTree(in);
        }
        int[] unicodeToByte = unicodeToByte();
        JsonNode vocab = root.path("model").path("vocab");
        int size = 0;
        for (JsonNode id : vocab) {
            size = Math.max(size, id.asInt() + 1);
        }
        for (JsonNode t : root.path("added_tokens")) {
            size = Math.max(size, t.path("id").asInt() + 1);
        }
        byte[][] bytes = new byte[size][];
        boolean[] special = new boolean[size];
        for (Iterator<Map.Entry<String, JsonNode>> it = vocab.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String key = e.getKey();
            byte[] b = new byte[key.length()];
            for (int i = 0; i < key.length(); i++) {
                char c = key.charAt(i);
                int v = c < unicodeToByte.length ? unicodeToByte[c] : -1;
                if (v < 0) {
                    throw new IllegalStateException("token '" + key + "' has a char outside the byte-level alphabet");
                }
                b[i] = (byte) v;
            }
            bytes[e.getValue().asInt()] = b;
        }
        ByteLevelVocabulary v = new ByteLevelVocabulary(bytes, special);
        for (JsonNode t : root.path("added_tokens")) {
            int id = t.path("id").asInt();
            bytes[id] = t.path("content").asText().getBytes(StandardCharsets.UTF_8);
            special[id] = t.path("special").asBoolean();
            v.added.put(t.path("content").asText(), id);
        }
        for (int i = 0; i < size; i++) {
            if (bytes[i] == null) {
                bytes[i] = new byte[0];
            }
        }
        return v;
    }

    /** GPT-2's bytes_to_unicode, inverted: printable bytes stand for themselves, the rest for U+0100 onwards. */
    private static int[] unicodeToByte() {
        int[] map = new int[512];
        java.util.Arrays.fill(map, -1);
        int next = 0;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            if (printable) {
                map[b] = b;
            } else {
                map[256 + next++] = b;
            }
        }
        return map;
    }

    int addedToken(String content) {
        Integer id = added.get(content);
        if (id == null) {
            throw new IllegalArgumentException("no added token " + content);
        }
        return id;
    }

    @Override
    public int size() {
        return bytes.length;
    }

    @Override
    public byte[] bytes(int id) {
        return bytes[id];
    }

    @Override
    public boolean isSpecial(int id) {
        return special[id];
    }
}

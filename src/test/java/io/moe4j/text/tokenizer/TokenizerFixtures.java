package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The reference tokenizers and encodings of {@code shared/tokenizers} (made with Hugging Face tokenizers). */
final class TokenizerFixtures {
    static final List<String> NAMES = List.of("gpt-oss", "qwen3", "deepseek-v3");

    private TokenizerFixtures() {
    }

    static Path dir() {
        String shared = System.getProperty("moe4j.shared");
        if (shared == null) {
            throw new IllegalStateException("system property moe4j.shared is not set (the pom's surefire config sets it)");
        }
        return Path.of(shared, "tokenizers");
    }

    static Path modelDir(String name) {
        return dir().resolve(name);
    }

    /** One line of expected.jsonl. */
    record Line(int number, String tokenizer, String kind, String text, int[] ids, String decoded) {
        @Override
        public String toString() {
            String shown = text.length() > 50 ? text.substring(0, 50) + "..." : text;
            return tokenizer + " " + kind + " #" + number + " " + shown.replace("\n", "\\n");
        }
    }

    static List<Line> lines() {
        ObjectMapper json = new ObjectMapper();
        List<Line> out = new ArrayList<>();
        try {
            List<String> raw = Files.readAllLines(dir().resolve("expected.jsonl"));
            for (int i = 0; i < raw.size(); i++) {
                if (raw.get(i).isBlank()) {
                    continue;
                }
                JsonNode n = json.readTree(raw.get(i));
                JsonNode idsNode = n.get("ids");
                int[] ids = new int[idsNode.size()];
                for (int k = 0; k < ids.length; k++) {
                    ids[k] = idsNode.get(k).asInt();
                }
                out.add(new Line(i + 1, n.get("tokenizer").asText(), n.get("kind").asText(), n.get("text").asText(),
                        ids, n.has("decoded") ? n.get("decoded").asText() : null));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }
}

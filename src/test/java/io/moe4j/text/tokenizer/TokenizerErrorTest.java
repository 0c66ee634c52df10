package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static io.moe4j.text.tokenizer.TinyTokenizers.byteLevel;
import static io.moe4j.text.tokenizer.TinyTokenizers.write;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Files a tokenizer cannot be built from get one error naming the file and the key at fault. */
class TokenizerErrorTest {
    @TempDir
    Path dir;

    private void failsWith(ObjectNode root, String... fragments) {
        Path file = dir.resolve("tokenizer.json");
        var assertion = assertThatThrownBy(() -> Tokenizer.load(write(dir, root))).isInstanceOf(MoeException.class)
                .hasMessageContaining(file.toString());
        for (String fragment : fragments) {
            assertion.hasMessageContaining(fragment);
        }
    }

    @Test
    void aDirectoryWithoutTokenizerJson() {
        assertThatThrownBy(() -> Tokenizer.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining(dir.toString()).hasMessageContaining("tokenizer.json");
    }

    @Test
    void aFileThatDoesNotParse() {
        assertThatThrownBy(() -> Tokenizer.load(write(dir, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0,")))
                .isInstanceOf(MoeException.class)
                .hasMessageContaining(dir.resolve("tokenizer.json").toString())
                .hasMessageContaining("does not parse");
    }

    @Test
    void aCorruptGzipFile() throws IOException {
        Files.write(dir.resolve("tokenizer.json.gz"), new byte[] {0x1f, (byte) 0x8b, 8, 0, 1, 2, 3});
        assertThatThrownBy(() -> Tokenizer.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining(dir.resolve("tokenizer.json.gz").toString());
    }

    @Test
    void modelsOtherThanBpe() {
        for (String type : new String[] {"WordPiece", "Unigram", "WordLevel"}) {
            ObjectNode root = byteLevel();
            ((ObjectNode) root.get("model")).put("type", type);
            failsWith(root, "model.type", type);
        }
    }

    @Test
    void anUnsupportedPreTokenizerInsideASequence() {
        ObjectNode root = byteLevel();
        ObjectNode seq = root.putObject("pre_tokenizer").put("type", "Sequence");
        seq.putArray("pretokenizers").addObject().put("type", "BertPreTokenizer");
        failsWith(root, "pre_tokenizer.pretokenizers[0].type", "BertPreTokenizer");
    }

    @Test
    void anUnsupportedNormalizerOrDecoder() {
        ObjectNode root = byteLevel();
        root.putObject("normalizer").put("type", "Precompiled");
        failsWith(root, "normalizer.type", "Precompiled");
        root.putObject("normalizer").put("type", "Replace").put("content", "x");
        failsWith(root, "normalizer.pattern");
        ObjectNode other = byteLevel();
        other.putObject("decoder").put("type", "WordPiece");
        failsWith(other, "decoder.type", "WordPiece");
    }

    @Test
    void aRegexJavaCannotCompileOrAnUnknownBehavior() {
        ObjectNode root = byteLevel();
        ObjectNode split = root.putObject("pre_tokenizer").put("type", "Split").put("behavior", "Isolated")
                .put("invert", false);
        split.putObject("pattern").put("Regex", "(unclosed");
        failsWith(root, "pre_tokenizer.pattern.Regex", "(unclosed");
        split.putObject("pattern").put("Regex", "a\\Kb");
        failsWith(root, "pre_tokenizer.pattern.Regex");
        split.putObject("pattern").put("Regex", "a").put("dummy", 0);
        split.put("behavior", "Sideways");
        failsWith(root, "pre_tokenizer.behavior", "Sideways");
    }

    @Test
    void mergesOfTokensOutsideTheVocabulary() {
        ObjectNode root = byteLevel("a b");
        ((ArrayNode) root.get("model").get("merges")).addArray().add("zz").add("a");
        failsWith(root, "model.merges[1]", "zz");
        ObjectNode unmade = byteLevel("a b");
        ((ObjectNode) unmade.get("model").get("vocab")).remove(TinyTokenizers.sym("ab"));
        failsWith(unmade, "model.merges[0]", "merged token");
        ObjectNode badString = byteLevel();
        ((ObjectNode) badString.get("model")).putArray("merges").add("a b c");
        failsWith(badString, "model.merges[0]");
    }

    @Test
    void aMissingVocabularyOrABadId() {
        ObjectNode root = byteLevel();
        ((ObjectNode) root.get("model")).remove("vocab");
        failsWith(root, "model.vocab");
        ObjectNode negative = byteLevel();
        ((ObjectNode) negative.get("model").get("vocab")).put("x-neg", -3);
        failsWith(negative, "model.vocab", "x-neg");
    }

    @Test
    void configProblemsNameTheConfigFile() throws IOException {
        write(dir, byteLevel());
        Path config = dir.resolve("tokenizer_config.json");
        Files.writeString(config, "{\"eos_token\": ");
        assertThatThrownBy(() -> Tokenizer.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining(config.toString()).hasMessageContaining("does not parse");
        Files.writeString(config, "{\"eos_token\": \"<|nowhere|>\"}");
        assertThatThrownBy(() -> Tokenizer.load(dir)).isInstanceOf(MoeException.class)
                .hasMessageContaining(config.toString()).hasMessageContaining("eos_token")
                .hasMessageContaining("<|nowhere|>");
    }
}

package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.moe4j.text.tokenizer.TinyTokenizers.addToken;
import static io.moe4j.text.tokenizer.TinyTokenizers.byteLevel;
import static io.moe4j.text.tokenizer.TinyTokenizers.sym;
import static io.moe4j.text.tokenizer.TinyTokenizers.write;
import static org.assertj.core.api.Assertions.assertThat;

/** BPE and added-token rules on tokenizers small enough to work out by hand (ids: bytes 0-255, merges from 256). */
class TinyTokenizerTest {
    @TempDir
    Path dir;

    @Test
    void mergesApplyInRankOrderNotLeftToRight() {
        // "a b" (rank 0) -> ab = 256, "b c" (rank 1) -> bc = 257, "ab c" (rank 2) -> abc = 258.
        Tokenizer t = Tokenizer.load(write(dir, byteLevel("a b", "b c", "ab c")));
        assertThat(t.encode("abc")).containsExactly(258);
        // With "b c" ranked first, bc forms and "a" has nothing to merge with: a, bc.
        Tokenizer reversed = Tokenizer.load(write(dir, byteLevel("b c", "a b", "ab c")));
        assertThat(reversed.token(256)).isEqualTo("bc");
        assertThat(reversed.encode("abc")).containsExactly('a', 256);
        // Equal pairs merge leftmost first: "aaa" with only "a a" -> aa, a.
        Tokenizer pairs = Tokenizer.load(write(dir, byteLevel("a a")));
        assertThat(pairs.encode("aaa")).containsExactly(256, 'a');
        assertThat(pairs.encode("aaaa")).containsExactly(256, 256);
    }

    @Test
    void stringMergesAndPairMergesAreTheSame() {
        ObjectNode pairs = byteLevel("a b", "ab c");
        ObjectNode strings = byteLevel("a b", "ab c");
        ArrayNode list = ((ObjectNode) strings.get("model")).putArray("merges");
        list.add(sym("a") + " " + sym("b")).add(sym("ab") + " " + sym("c"));
        int[] fromPairs = Tokenizer.load(write(dir, pairs)).encode("abcab c");
        int[] fromStrings = Tokenizer.load(write(dir, strings)).encode("abcab c");
        assertThat(fromPairs).containsExactly(257, 256, ' ', 'c');
        assertThat(fromStrings).containsExactly(fromPairs);
    }

    @Test
    void ignoreMergesTakesAWordThatIsAToken() {
        // "abd" is in the vocabulary but no merge builds it.
        ObjectNode root = byteLevel("a b");
        ((ObjectNode) root.get("model").get("vocab")).put(sym("abd"), 300);
        assertThat(Tokenizer.load(write(dir, root)).encode("abd")).containsExactly(256, 'd');
        ((ObjectNode) root.get("model")).put("ignore_merges", true);
        assertThat(Tokenizer.load(write(dir, root)).encode("abd")).containsExactly(300);
    }

    @Test
    void addedTokensHonourStripAndSingleWord() {
        ObjectNode root = byteLevel();
        addToken(root, 300, "<x>", true, false, false, false, false);
        addToken(root, 301, "TOK", false, false, true, false, false); // lstrip
        addToken(root, 302, "END", false, false, false, true, false); // rstrip
        addToken(root, 303, "cat", false, true, false, false, false); // single word
        Tokenizer t = Tokenizer.load(write(dir, root));
        assertThat(t.encode("a<x>b")).containsExactly('a', 300, 'b');
        // lstrip: the spaces before TOK go with it; rstrip: the spaces after END go with it.
        assertThat(t.encode("a  TOK b")).containsExactly('a', 301, ' ', 'b');
        assertThat(t.encode("a END  b")).containsExactly('a', ' ', 302, 'b');
        // single_word: "cat" inside "concat" or before a letter stays text; before '.' it is the token.
        assertThat(t.encode("concat cat.")).containsExactly('c', 'o', 'n', 'c', 'a', 't', ' ', 303, '.');
        assertThat(t.encode("cats")).containsExactly('c', 'a', 't', 's');
        assertThat(t.isSpecial(300)).isTrue();
        assertThat(t.isSpecial(301)).isFalse();
        assertThat(t.decode(t.encode("a  TOK b"))).isEqualTo("aTOK b");
    }

    @Test
    void addedTokensAreMatchedLongestFirst() {
        ObjectNode root = byteLevel();
        addToken(root, 300, "<a>", true, false, false, false, false);
        addToken(root, 301, "<a><b>", true, false, false, false, false);
        Tokenizer t = Tokenizer.load(write(dir, root));
        assertThat(t.encode("<a><b><a>")).containsExactly(301, 300);
    }

    @Test
    void normalizedAddedTokensMatchTheNormalizedText() {
        // With NFC, "e" + U+0301 becomes "é" (U+00E9) before matching; a normalized added token written
        // decomposed matches it.
        ObjectNode root = byteLevel();
        root.putObject("normalizer").put("type", "NFC");
        addToken(root, 300, "e\u0301!", false, false, false, false, true);
        addToken(root, 301, "e\u0301?", false, false, false, false, false);
        Tokenizer t = Tokenizer.load(write(dir, root));
        assertThat(t.encode("\u00e9!")).containsExactly(300);
        assertThat(t.encode("e\u0301!")).containsExactly(300);
        // Not normalized: matched only as written, before normalization.
        assertThat(t.encode("e\u0301?")).containsExactly(301);
        assertThat(t.encode("\u00e9?")).containsExactly(0xC3, 0xA9, '?');
    }

    @Test
    void withoutADecoderTokensAreJoinedWithSpaces() {
        ObjectNode root = byteLevel("a b");
        root.putNull("decoder");
        Tokenizer t = Tokenizer.load(write(dir, root));
        assertThat(t.decode(new int[] {256, 'c'})).isEqualTo("ab c");
    }
}

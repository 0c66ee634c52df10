package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.moe4j.text.tokenizer.TinyTokenizers.JSON;
import static io.moe4j.text.tokenizer.TinyTokenizers.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The SentencePiece-style BPE of Mistral/Mixtral tokenizer.json files (normalizer Prepend '▁' + Replace ' ' -> '▁',
 * no pre-tokenizer, byte fallback, decoder Replace + ByteFallback + Fuse + Strip; or the newer layout with a Metaspace
 * pre-tokenizer and decoder), on a vocabulary small enough to work out by hand: {@code <unk> <s> </s>} = 0, 1, 2; {@code <0x00>..<0xFF>} = 3..258; ▁ = 259, a = 260, b = 261,
 * ▁a = 262, ab = 263, ▁ab = 264.
 */
class SentencePieceStyleTest {
    private static final int BYTE0 = 3;

    @TempDir
    Path dir;

    private static ObjectNode tokenizerJson() {
        ObjectNode root = JSON.createObjectNode();
        ArrayNode added = root.putArray("added_tokens");
        String[] specials = {"<unk>", "<s>", "</s>"};
        for (int i = 0; i < specials.length; i++) {
            added.addObject().put("id", i).put("content", specials[i]).put("single_word", false).put("lstrip", false)
                    .put("rstrip", false).put("normalized", false).put("special", true);
        }
        ObjectNode normalizer = root.putObject("normalizer").put("type", "Sequence");
        ArrayNode norms = normalizer.putArray("normalizers");
        norms.addObject().put("type", "Prepend").put("prepend", "▁");
        ObjectNode replace = norms.addObject().put("type", "Replace").put("content", "▁");
        replace.putObject("pattern").put("String", " ");
        root.putNull("pre_tokenizer");
        ObjectNode decoder = root.putObject("decoder").put("type", "Sequence");
        ArrayNode steps = decoder.putArray("decoders");
        ObjectNode back = steps.addObject().put("type", "Replace").put("content", " ");
        back.putObject("pattern").put("String", "▁");
        steps.addObject().put("type", "ByteFallback");
        steps.addObject().put("type", "Fuse");
        steps.addObject().put("type", "Strip").put("content", " ").put("start", 1).put("stop", 0);
        ObjectNode model = root.putObject("model");
        model.put("type", "BPE").putNull("dropout").put("unk_token", "<unk>").put("fuse_unk", true)
                .put("byte_fallback", true);
        ObjectNode vocab = model.putObject("vocab");
        for (int i = 0; i < specials.length; i++) {
            vocab.put(specials[i], i);
        }
        for (int b = 0; b < 256; b++) {
            vocab.put(String.format("<0x%02X>", b), BYTE0 + b);
        }
        String[] pieces = {"▁", "a", "b", "▁a", "ab", "▁ab"};
        for (int i = 0; i < pieces.length; i++) {
            vocab.put(pieces[i], 259 + i);
        }
        model.putArray("merges").add("▁ a").add("a b").add("▁a b");
        return root;
    }

    @Test
    void encodesWithTheWordMarkAndByteFallback() {
        Tokenizer t = Tokenizer.load(write(dir, tokenizerJson()));
        // "▁ab▁ab": (▁, a) merges first at both places, then (▁a, b).
        assertThat(t.encode("ab ab")).containsExactly(264, 264);
        // é is no token: its UTF-8 bytes C3 A9 fall back to byte tokens.
        assertThat(t.encode("aé")).containsExactly(262, BYTE0 + 0xC3, BYTE0 + 0xA9);
        // The mark is prepended to each piece of text, also after a special token.
        assertThat(t.encode("<s>ab")).containsExactly(1, 264);
        assertThat(t.encode("")).isEmpty();
    }

    @Test
    void decodesMarksBytesAndTheLeadingSpace() {
        Tokenizer t = Tokenizer.load(write(dir, tokenizerJson()));
        assertThat(t.decode(new int[] {262, BYTE0 + 0xC3, BYTE0 + 0xA9})).isEqualTo("aé");
        assertThat(t.decode(new int[] {264, 264})).isEqualTo("ab ab");
        // A byte run that is not UTF-8 gives one U+FFFD per byte (E2 82 is one maximal subpart, but two bytes).
        assertThat(t.decode(new int[] {BYTE0 + 0xE2, BYTE0 + 0x82, 260})).isEqualTo("\uFFFD\uFFFDa");
        assertThat(t.decode(new int[] {1, 264, 2})).isEqualTo("<s> ab</s>");
        assertThat(t.decode(new int[] {1, 264, 2}, true)).isEqualTo("ab");
    }

    @Test
    void streamsHoldingByteRunsUntilTheyEnd() {
        Tokenizer t = Tokenizer.load(write(dir, tokenizerJson()));
        IncrementalDecoder stream = t.incrementalDecoder();
        assertThat(stream.next(262)).isEqualTo("a");
        assertThat(stream.next(BYTE0 + 0xC3)).isEmpty();
        assertThat(stream.next(BYTE0 + 0xA9)).isEmpty();
        assertThat(stream.hasPending()).isTrue();
        assertThat(stream.next(264)).isEqualTo("é ab");
        assertThat(stream.next(BYTE0 + 0xF0)).isEmpty();
        assertThat(stream.flush()).isEqualTo("\uFFFD");
    }

    /** The same vocabulary with the newer layout: no normalizer, a Metaspace pre-tokenizer and decoder. */
    private static ObjectNode metaspaceJson(String scheme, boolean split) {
        ObjectNode root = tokenizerJson();
        root.putNull("normalizer");
        root.putObject("pre_tokenizer").put("type", "Metaspace").put("replacement", "▁").put("prepend_scheme", scheme)
                .put("split", split);
        ObjectNode decoder = root.putObject("decoder").put("type", "Sequence");
        ArrayNode steps = decoder.putArray("decoders");
        steps.addObject().put("type", "Metaspace").put("replacement", "▁").put("prepend_scheme", scheme)
                .put("split", split);
        steps.addObject().put("type", "ByteFallback");
        steps.addObject().put("type", "Fuse");
        return root;
    }

    @Test
    void metaspacePrependsTheMarkOnlyAtTheStartOfTheInputWithSchemeFirst() {
        Tokenizer first = Tokenizer.load(write(dir, metaspaceJson("first", false)));
        assertThat(first.encode("ab ab")).containsExactly(264, 264);
        // After a special token the text does not begin the input: no mark, so "ab" merges to ab = 263.
        assertThat(first.encode("<s>ab")).containsExactly(1, 263);
        Tokenizer always = Tokenizer.load(write(dir, metaspaceJson("always", false)));
        assertThat(always.encode("<s>ab")).containsExactly(1, 264);
        Tokenizer never = Tokenizer.load(write(dir, metaspaceJson("never", true)));
        // No mark before the first word; split cuts before each mark: "ab", "▁ab".
        assertThat(never.encode("ab ab")).containsExactly(263, 264);
    }

    @Test
    void theMetaspaceDecoderDropsTheMarksOfTheFirstToken() {
        Tokenizer first = Tokenizer.load(write(dir, metaspaceJson("first", false)));
        assertThat(first.decode(new int[] {264, 264})).isEqualTo("ab ab");
        assertThat(first.decode(new int[] {1, 264})).isEqualTo("<s> ab");
        IncrementalDecoder stream = first.incrementalDecoder(true);
        assertThat(stream.next(1) + stream.next(264) + stream.next(262)).isEqualTo("ab a");
        Tokenizer never = Tokenizer.load(write(dir, metaspaceJson("never", true)));
        assertThat(never.decode(new int[] {264, 264})).isEqualTo(" ab ab");
    }

    @Test
    void aDecoderChainOutOfOrderIsRefused() {
        ObjectNode root = tokenizerJson();
        ArrayNode steps = (ArrayNode) root.get("decoder").get("decoders");
        steps.insert(0, JSON.createObjectNode().put("type", "Fuse"));
        assertThatThrownBy(() -> Tokenizer.load(write(dir, root))).isInstanceOf(MoeException.class)
                .hasMessageContaining("decoder.decoders[1].type").hasMessageContaining("order");
        ObjectNode other = tokenizerJson();
        ((ArrayNode) other.get("decoder").get("decoders")).set(0, JSON.createObjectNode().put("type", "CTC"));
        assertThatThrownBy(() -> Tokenizer.load(write(dir, other))).isInstanceOf(MoeException.class)
                .hasMessageContaining("decoder.decoders[0].type").hasMessageContaining("CTC");
    }
}

package io.moe4j.text.tokenizer;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/** The pieces a tokenizer is made of: split behaviors, pattern translation, byte table, lossy UTF-8. */
class TokenizerPartsTest {
    private static List<String> split(String regex, SplitBehavior behavior, boolean invert, String text) {
        List<String> out = new ArrayList<>();
        new PreTokenizer.RegexSplit(Pattern.compile(regex), behavior, invert).split(text, true, out);
        return out;
    }

    @Test
    void splitBehaviors() {
        String text = "a-b--c";
        assertThat(split("-", SplitBehavior.ISOLATED, false, text)).containsExactly("a", "-", "b", "-", "-", "c");
        assertThat(split("-", SplitBehavior.REMOVED, false, text)).containsExactly("a", "b", "c");
        assertThat(split("-", SplitBehavior.MERGED_WITH_PREVIOUS, false, text)).containsExactly("a-", "b-", "-", "c");
        assertThat(split("-", SplitBehavior.MERGED_WITH_NEXT, false, text)).containsExactly("a", "-b", "-", "-c");
        assertThat(split("-", SplitBehavior.CONTIGUOUS, false, text)).containsExactly("a", "-", "b", "--", "c");
        // invert: the pattern marks what to keep.
        assertThat(split("-", SplitBehavior.REMOVED, true, text)).containsExactly("-", "-", "-");
        assertThat(split("-", SplitBehavior.ISOLATED, false, "")).isEmpty();
    }

    @Test
    void onigurumaConstructsMeanTheSameInJava() {
        // \s is Unicode White_Space, as in Oniguruma: the no-break space and the ideographic space are spaces.
        Pattern space = OnigPatterns.compile("\\s+");
        assertThat(space.matcher("\u00a0\u3000\u2003\t").matches()).isTrue();
        assertThat(space.matcher("\u200b").matches()).isFalse();
        // \h is a hex digit in Oniguruma.
        assertThat(OnigPatterns.compile("\\h+").matcher("09afAF").matches()).isTrue();
        assertThat(OnigPatterns.compile("\\h").matcher(" ").matches()).isFalse();
        // \p{^L} negates; script names work without Java's Is prefix.
        assertThat(OnigPatterns.compile("\\p{^L}+").matcher("12 !").matches()).isTrue();
        assertThat(OnigPatterns.compile("\\p{Han}+").matcher("中文").matches()).isTrue();
        // Case-insensitive group and the whitespace-before-a-word rule of the GPT patterns.
        assertThat(OnigPatterns.compile("(?i:'s|'t)").matcher("'S").matches()).isTrue();
        List<String> words = new ArrayList<>();
        new PreTokenizer.RegexSplit(OnigPatterns.compile("\\s+(?!\\S)|\\s+|\\S+"), SplitBehavior.ISOLATED, false)
                .split("a   b ", true, words);
        assertThat(words).containsExactly("a", "  ", " ", "b", " ");
    }

    @Test
    void byteTableCoversEveryByteOnce() {
        byte[] all = new byte[256];
        for (int b = 0; b < 256; b++) {
            all[b] = (byte) b;
        }
        StringBuilder symbols = new StringBuilder();
        for (byte b : all) {
            symbols.append(ByteLevel.encodeByte(b));
        }
        assertThat(symbols.chars().distinct().count()).isEqualTo(256);
        assertThat(ByteLevel.decode(symbols.toString())).isEqualTo(all);
        assertThat(ByteLevel.encodeByte((byte) ' ')).isEqualTo("\u0120");
        assertThat(ByteLevel.encodeByte((byte) '\n')).isEqualTo("\u010a");
        assertThat(ByteLevel.encode("é")).isEqualTo("\u00c3\u00a9");
        // A token with a character outside the table is its own UTF-8 text.
        assertThat(ByteLevel.decode("<｜x｜>")).isEqualTo("<｜x｜>".getBytes(StandardCharsets.UTF_8));
    }

    private static String lossy(int... bytes) {
        byte[] b = new byte[bytes.length];
        for (int i = 0; i < b.length; i++) {
            b[i] = (byte) bytes[i];
        }
        return Utf8.decodeLossy(b, 0, b.length);
    }

    @Test
    void illFormedUtf8BecomesOneReplacementPerMaximalSubpart() {
        // The example of the Unicode Standard, section 3.9 (U+FFFD substitution of maximal subparts).
        assertThat(lossy(0x61, 0xF1, 0x80, 0x80, 0xE1, 0x80, 0xC2, 0x62, 0x80, 0x63, 0x80, 0xBF, 0x64))
                .isEqualTo("a\uFFFD\uFFFD\uFFFDb\uFFFDc\uFFFD\uFFFDd");
        assertThat(lossy(0xF0, 0x9F)).isEqualTo("\uFFFD");
        assertThat(lossy(0xE0, 0x80)).isEqualTo("\uFFFD\uFFFD"); // overlong
        assertThat(lossy(0xED, 0xA0, 0x80)).isEqualTo("\uFFFD\uFFFD\uFFFD"); // surrogate
        assertThat(lossy(0xF4, 0x90, 0x80, 0x80)).isEqualTo("\uFFFD\uFFFD\uFFFD\uFFFD"); // past U+10FFFF
        assertThat(lossy(0xC0, 0xAF)).isEqualTo("\uFFFD\uFFFD");
        assertThat(lossy(0xF0, 0x9F, 0x98, 0x80)).isEqualTo("😀");
    }

    @Test
    void decodingInPiecesAtTheHeldBackBoundaryEqualsDecodingWhole() {
        Random random = new Random(11);
        int[] interesting = {0x41, 0x80, 0xBF, 0xC2, 0xC3, 0xDF, 0xE0, 0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF, 0x9F,
            0xA0, 0x90};
        for (int round = 0; round < 5000; round++) {
            byte[] bytes = new byte[random.nextInt(12)];
            for (int i = 0; i < bytes.length; i++) {
                bytes[i] = (byte) interesting[random.nextInt(interesting.length)];
            }
            StringBuilder streamed = new StringBuilder();
            byte[] pending = new byte[0];
            int i = 0;
            while (i < bytes.length) {
                int n = 1 + random.nextInt(3);
                byte[] chunk = java.util.Arrays.copyOfRange(bytes, i, Math.min(bytes.length, i + n));
                i += chunk.length;
                byte[] buffer = new byte[pending.length + chunk.length];
                System.arraycopy(pending, 0, buffer, 0, pending.length);
                System.arraycopy(chunk, 0, buffer, pending.length, chunk.length);
                int hold = Utf8.incompleteTail(buffer, 0, buffer.length);
                String text = Utf8.decodeLossy(buffer, 0, buffer.length - hold);
                streamed.append(text);
                pending = java.util.Arrays.copyOfRange(buffer, buffer.length - hold, buffer.length);
            }
            streamed.append(Utf8.decodeLossy(pending, 0, pending.length));
            assertThat(streamed.toString()).isEqualTo(Utf8.decodeLossy(bytes, 0, bytes.length));
        }
    }
}

package io.moe4j.text.tokenizer;

import java.nio.charset.StandardCharsets;

/**
 * The GPT-2 byte-to-character table that byte-level BPE works in: each of the 256 byte values stands for one
 * printable character, so any UTF-8 text becomes a string of vocabulary symbols and back without loss.
 *
 * <p>Printable Latin-1 bytes ('!'..'~', '¡'..'¬', '®'..'ÿ') keep their own code point; the other 68 bytes
 * (controls, space, soft hyphen, ...) are numbered from U+0100 upwards in byte order. A space is therefore 'Ġ'
 * (U+0120) and a newline 'Ċ' (U+010A).
 */
final class ByteLevel {
    private static final char[] BYTE_TO_CHAR = new char[256];
    /** Indexed by character (all table characters are below U+0144); -1 where a character is no byte. */
    private static final short[] CHAR_TO_BYTE = new short[0x144];

    static {
        java.util.Arrays.fill(CHAR_TO_BYTE, (short) -1);
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            char c = (char) (printable ? b : next++);
            BYTE_TO_CHAR[b] = c;
            CHAR_TO_BYTE[c] = (short) b;
        }
    }

    private ByteLevel() {
    }

    /** The symbol string of a piece of text: its UTF-8 bytes, one table character each. */
    static String encode(String text) {
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        char[] out = new char[utf8.length];
        for (int i = 0; i < utf8.length; i++) {
            out[i] = BYTE_TO_CHAR[utf8[i] & 0xFF];
        }
        return new String(out);
    }

    /** The symbol of one byte. */
    static String encodeByte(byte b) {
        return String.valueOf(BYTE_TO_CHAR[b & 0xFF]);
    }

    /**
     * The bytes a token stands for. As the reference ByteLevel decoder does, a token holding any character outside
     * the table (added tokens such as {@code <｜begin▁of▁sentence｜>} or one with a plain space) is taken as its own
     * UTF-8 text instead.
     */
    static byte[] decode(String token) {
        byte[] out = new byte[token.length()];
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c >= CHAR_TO_BYTE.length || CHAR_TO_BYTE[c] < 0) {
                return token.getBytes(StandardCharsets.UTF_8);
            }
            out[i] = (byte) CHAR_TO_BYTE[c];
        }
        return out;
    }
}

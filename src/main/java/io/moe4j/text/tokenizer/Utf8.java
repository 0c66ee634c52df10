package io.moe4j.text.tokenizer;

/**
 * Lossy UTF-8 decoding with the Unicode "maximal subpart" rule (each maximal ill-formed subsequence becomes one
 * U+FFFD), which is what the reference decoder's {@code String::from_utf8_lossy} does; written out rather than left to
 * {@link java.nio.charset.CharsetDecoder} so that the streaming decoder can rely on the exact same boundaries.
 */
final class Utf8 {
    private static final char REPLACEMENT = '\uFFFD';

    private Utf8() {
    }

    /** Decodes {@code bytes[from, to)}, replacing ill-formed subsequences. */
    static String decodeLossy(byte[] bytes, int from, int to) {
        StringBuilder out = new StringBuilder(to - from);
        int i = from;
        while (i < to) {
            int b0 = bytes[i] & 0xFF;
            if (b0 < 0x80) {
                out.append((char) b0);
                i++;
                continue;
            }
            int valid = validPrefix(bytes, i, to);
            int need = sequenceLength(b0);
            if (need > 0 && valid == need) {
                out.appendCodePoint(codePoint(bytes, i, need));
                i += need;
            } else {
                out.append(REPLACEMENT);
                i += Math.max(valid, 1);
            }
        }
        return out.toString();
    }

    /**
     * How many bytes at the end of {@code bytes[from, to)} form the start of a sequence that more bytes could still
     * complete (0 to 3). Decoding {@code [from, to - n)} now and the rest later gives the same text as decoding it all
     * at once, because a complete or ill-formed sequence before them does not depend on what follows.
     */
    static int incompleteTail(byte[] bytes, int from, int to) {
        for (int back = 1; back <= 3 && to - back >= from; back++) {
            int start = to - back;
            int b0 = bytes[start] & 0xFF;
            if (b0 < 0x80) {
                return 0;
            }
            if (b0 >= 0xC0) {
                int need = sequenceLength(b0);
                return need > back && validPrefix(bytes, start, to) == back ? back : 0;
            }
        }
        return 0;
    }

    /** The length a lead byte announces, or 0 if it cannot lead a well-formed sequence. */
    private static int sequenceLength(int b0) {
        if (b0 >= 0xC2 && b0 <= 0xDF) {
            return 2;
        }
        if (b0 >= 0xE0 && b0 <= 0xEF) {
            return 3;
        }
        if (b0 >= 0xF0 && b0 <= 0xF4) {
            return 4;
        }
        return 0;
    }

    /**
     * How many bytes from {@code i} are a well-formed prefix of one sequence (at most its length), following the
     * table of well-formed byte sequences in the Unicode standard (no overlongs, no surrogates, nothing past U+10FFFF).
     */
    private static int validPrefix(byte[] bytes, int i, int to) {
        int b0 = bytes[i] & 0xFF;
        int need = sequenceLength(b0);
        if (need == 0) {
            return 0;
        }
        int n = 1;
        while (n < need && i + n < to) {
            int b = bytes[i + n] & 0xFF;
            int lo = 0x80;
            int hi = 0xBF;
            if (n == 1) {
                if (b0 == 0xE0) {
                    lo = 0xA0;
                } else if (b0 == 0xED) {
                    hi = 0x9F;
                } else if (b0 == 0xF0) {
                    lo = 0x90;
                } else if (b0 == 0xF4) {
                    hi = 0x8F;
                }
            }
            if (b < lo || b > hi) {
                break;
            }
            n++;
        }
        return n;
    }

    private static int codePoint(byte[] bytes, int i, int length) {
        int b0 = bytes[i] & 0xFF;
        int cp = switch (length) {
            case 2 -> b0 & 0x1F;
            case 3 -> b0 & 0x0F;
            default -> b0 & 0x07;
        };
        for (int k = 1; k < length; k++) {
            cp = (cp << 6) | (bytes[i + k] & 0x3F);
        }
        return cp;
    }
}

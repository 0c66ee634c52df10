package io.moe4j.generate.constraint;

import java.util.List;

/**
 * Inside a JSON string, after its opening quote. Checks what a parser will: no raw control bytes, escapes from
 * the JSON set, four hex digits after {@code \\u} (and no surrogate through an escape, so that the text always
 * decodes to well-formed Unicode: a narrowing), and well-formed UTF-8 (no overlong forms, no surrogates, nothing
 * above U+10FFFF) since byte-level tokens may split a character.
 *
 * @param phase  NORMAL, ESCAPE (after a backslash), UNICODE (in a \\u escape), UTF8 (inside a multi-byte character)
 * @param left   hex digits or continuation bytes still to come
 * @param lo     lowest allowed next byte (UTF8), or 1 when the next hex digit must be 0-7 (after \\uD)
 * @param hi     highest allowed next byte (UTF8)
 */
record StringFrame(int phase, int left, int lo, int hi) implements Frame {
    static final int NORMAL = 0;
    static final int ESCAPE = 1;
    static final int UNICODE = 2;
    static final int UTF8 = 3;

    /** Plain string content: the one state that ordinary text keeps unchanged. */
    static final StringFrame NORMAL_STATE = new StringFrame(NORMAL, 0, 0, 0);
    /** What {@link #next} answers for the closing quote. */
    static final StringFrame CLOSED = new StringFrame(-1, 0, 0, 0);


    @Override
    public void step(int b, Stack self, JsonGrammar grammar, List<Stack> out) {
        StringFrame next = next(this, b);
        if (next == CLOSED) {
            out.add(self.pop());
        } else if (next == this) {
            out.add(self);
        } else if (next != null) {
            out.add(self.replace(next));
        }
    }

    /** The string state after byte b: CLOSED for the closing quote, null when b cannot come here. */
    static StringFrame next(StringFrame s, int b) {
        switch (s.phase) {
            case NORMAL -> {
                if (b == '"') {
                    return CLOSED;
                }
                if (b == '\\') {
                    return new StringFrame(ESCAPE, 0, 0, 0);
                }
                if (b < 0x20) {
                    return null;
                }
                if (b < 0x80) {
                    return s;
                }
                if (b >= 0xC2 && b <= 0xDF) {
                    return new StringFrame(UTF8, 1, 0x80, 0xBF);
                }
                if (b == 0xE0) {
                    return new StringFrame(UTF8, 2, 0xA0, 0xBF);
                }
                if (b == 0xED) {
                    return new StringFrame(UTF8, 2, 0x80, 0x9F);
                }
                if (b >= 0xE1 && b <= 0xEF) {
                    return new StringFrame(UTF8, 2, 0x80, 0xBF);
                }
                if (b == 0xF0) {
                    return new StringFrame(UTF8, 3, 0x90, 0xBF);
                }
                if (b >= 0xF1 && b <= 0xF3) {
                    return new StringFrame(UTF8, 3, 0x80, 0xBF);
                }
                if (b == 0xF4) {
                    return new StringFrame(UTF8, 3, 0x80, 0x8F);
                }
                return null;
            }
            case ESCAPE -> {
                if (b == 'u') {
                    return new StringFrame(UNICODE, 4, 0, 0);
                }
                return unescaped(b) >= 0 ? NORMAL_STATE : null;
            }
            case UNICODE -> {
                int digit = Character.digit(b, 16);
                if (digit < 0 || (s.lo == 1 && digit > 7)) {
                    return null;
                }
                if (s.left == 1) {
                    return NORMAL_STATE;
                }
                boolean surrogateLead = s.left == 4 && digit == 0xD;
                return new StringFrame(UNICODE, s.left - 1, surrogateLead ? 1 : 0, 0);
            }
            case UTF8 -> {
                if (b < s.lo || b > s.hi) {
                    return null;
                }
                return s.left == 1 ? NORMAL_STATE : new StringFrame(UTF8, s.left - 1, 0x80, 0xBF);
            }
            default -> {
                return null;
            }
        }
    }

    /** The character a short escape's letter stands for ({@code n} for a line feed ...), or -1 for none. */
    static int unescaped(int letter) {
        return switch (letter) {
            case '"', '\\', '/' -> letter;
            case 'b' -> '\b';
            case 'f' -> '\f';
            case 'n' -> '\n';
            case 'r' -> '\r';
            case 't' -> '\t';
            default -> -1;
        };
    }

    /** Plain content keeps this state as it is: see {@link TokenTrie}'s shortcut. */
    boolean isPlain() {
        return this == NORMAL_STATE;
    }

    @Override
    public int cost() {
        return switch (phase) {
            case NORMAL -> 1;
            case ESCAPE -> 2;
            default -> left + 1;
        };
    }
}

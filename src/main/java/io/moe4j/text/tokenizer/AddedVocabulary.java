package io.moe4j.text.tokenizer;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Finds added tokens in text, as the reference does: leftmost-longest matching of all contents at once, then the
 * {@code single_word} test (a match touching a word character is not taken) and the {@code lstrip}/{@code rstrip}
 * widening over neighbouring whitespace. Matching is by UTF-16 units, which for valid strings gives the same matches
 * as the reference's matching by UTF-8 bytes.
 */
final class AddedVocabulary {
    /** One piece of a split: an added token ({@code token != null}) or text still to tokenize. */
    record Piece(String text, AddedToken token) {
    }

    private static final class Node {
        final Map<Character, Node> children = new HashMap<>(4);
        AddedToken token;
    }

    private final Node root = new Node();
    private final boolean empty;
    /** The UTF-16 units a token can start with: most positions of a text are ruled out without a map lookup. */
    private final java.util.BitSet firstUnits = new java.util.BitSet(1 << 16);

    /** @param tokens the tokens this matcher finds, each under the text it matches (its content, normalized or not) */
    AddedVocabulary(Map<String, AddedToken> tokens) {
        for (Map.Entry<String, AddedToken> e : tokens.entrySet()) {
            Node node = root;
            for (char c : e.getKey().toCharArray()) {
                node = node.children.computeIfAbsent(c, k -> new Node());
            }
            node.token = e.getValue();
            firstUnits.set(e.getKey().charAt(0));
        }
        empty = tokens.isEmpty();
    }

    /** Splits {@code text} into added tokens and the text between them (no empty pieces). */
    List<Piece> split(String text) {
        List<Piece> out = new ArrayList<>();
        if (empty) {
            if (!text.isEmpty()) {
                out.add(new Piece(text, null));
            }
            return out;
        }
        int startOffset = 0;
        int i = 0;
        int length = text.length();
        while (i < length) {
            if (!firstUnits.get(text.charAt(i))) {
                i++;
                continue;
            }
            // The longest token starting at i.
            Node node = root;
            AddedToken found = null;
            int foundEnd = -1;
            for (int j = i; j < length; j++) {
                node = node.children.get(text.charAt(j));
                if (node == null) {
                    break;
                }
                if (node.token != null) {
                    found = node.token;
                    foundEnd = j + 1;
                }
            }
            if (found == null) {
                i++;
                continue;
            }
            int start = i;
            int stop = foundEnd;
            i = foundEnd; // matches never overlap, a rejected one included
            if (found.singleWord()) {
                boolean wordBefore = start > 0 && isWordChar(text.codePointBefore(start));
                boolean wordAfter = stop < length && isWordChar(text.codePointAt(stop));
                if (wordBefore || wordAfter) {
                    continue;
                }
            }
            if (found.lstrip()) {
                int s = start;
                while (s > 0 && isWhiteSpace(text.codePointBefore(s))) {
                    s -= Character.charCount(text.codePointBefore(s));
                }
                start = Math.max(s, startOffset);
            }
            if (found.rstrip()) {
                while (stop < length && isWhiteSpace(text.codePointAt(stop))) {
                    stop += Character.charCount(text.codePointAt(stop));
                }
                // The reference goes on matching after the token itself, not after the whitespace it took.
            }
            if (start > startOffset) {
                out.add(new Piece(text.substring(startOffset, start), null));
            }
            out.add(new Piece(text.substring(start, stop), found));
            startOffset = stop;
        }
        if (startOffset < length) {
            out.add(new Piece(text.substring(startOffset), null));
        }
        return out;
    }

    /** The Unicode {@code White_Space} property (what {@code \s} means in the reference's regex crate). */
    static boolean isWhiteSpace(int cp) {
        return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680
                || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F
                || cp == 0x3000;
    }

    /** A word character as the regex crate's Unicode {@code \w} defines it. */
    static boolean isWordChar(int cp) {
        if (Character.isAlphabetic(cp) || cp == 0x200C || cp == 0x200D) {
            return true;
        }
        int type = Character.getType(cp);
        return type == Character.NON_SPACING_MARK || type == Character.ENCLOSING_MARK
                || type == Character.COMBINING_SPACING_MARK || type == Character.DECIMAL_DIGIT_NUMBER
                || type == Character.CONNECTOR_PUNCTUATION;
    }
}

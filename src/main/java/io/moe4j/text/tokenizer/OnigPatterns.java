package io.moe4j.text.tokenizer;

import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * Compiles the Oniguruma patterns of tokenizer.json files into {@link Pattern}s with the same meaning.
 *
 * <p>What the two engines share and the patterns of real tokenizers use is taken as is: backtracking alternation
 * (leftmost alternative wins), greedy, lazy and possessive quantifiers, atomic groups, lookahead, inline flag groups
 * such as {@code (?i:'s|'t)}, {@code \p{L}}-style general categories and nested character classes. The differences
 * are rewritten:
 * <ul>
 *   <li>{@code \s \d \w \b} are Unicode in Oniguruma's default syntax and ASCII in Java's by default, so the pattern
 *       is compiled with {@link Pattern#UNICODE_CHARACTER_CLASS} ({@code \s} is then the White_Space property, the
 *       same set as Oniguruma's, U+00A0 included);</li>
 *   <li>{@code \h}/{@code \H} mean a hex digit in Oniguruma and horizontal whitespace in Java;</li>
 *   <li>{@code \p{^X}} is Oniguruma's negation, {@code \P{X}} in Java;</li>
 *   <li>script names ({@code \p{Han}}) need Java's {@code Is} prefix.</li>
 * </ul>
 */
final class OnigPatterns {
    private OnigPatterns() {
    }

    /**
     * @throws PatternSyntaxException if the pattern is not valid for Java or uses a construct with no Java
     *                                equivalent ({@code \K}, {@code \g<name>}, absent operators ...)
     */
    static Pattern compile(String onig) {
        return Pattern.compile(translate(onig), Pattern.UNICODE_CHARACTER_CLASS);
    }

    static String translate(String onig) {
        StringBuilder out = new StringBuilder(onig.length() + 16);
        int classDepth = 0;
        int i = 0;
        while (i < onig.length()) {
            char c = onig.charAt(i);
            if (c == '\\' && i + 1 < onig.length()) {
                char e = onig.charAt(i + 1);
                switch (e) {
                    case 'h' -> {
                        out.append(classDepth > 0 ? "0-9a-fA-F" : "[0-9a-fA-F]");
                        i += 2;
                    }
                    case 'H' -> {
                        if (classDepth > 0) {
                            throw new PatternSyntaxException("\\H inside a character class is not supported", onig, i);
                        }
                        out.append("[^0-9a-fA-F]");
                        i += 2;
                    }
                    case 'K', 'g', 'G', 'y', 'Y', 'O' ->
                            throw new PatternSyntaxException("\\" + e + " has no Java equivalent", onig, i);
                    case 'p', 'P' -> i = property(onig, i, e, out);
                    default -> {
                        out.append(c).append(e);
                        i += 2;
                    }
                }
                continue;
            }
            if (c == '[') {
                classDepth++;
                out.append(c);
                i++;
                // A ']' or '^]' right after the opening bracket is a literal in both engines.
                if (i < onig.length() && onig.charAt(i) == '^') {
                    out.append('^');
                    i++;
                }
                if (i < onig.length() && onig.charAt(i) == ']') {
                    out.append("\\]");
                    i++;
                }
                continue;
            }
            if (c == ']' && classDepth > 0) {
                classDepth--;
            }
            if (c == '(' && onig.startsWith("(?~", i)) {
                throw new PatternSyntaxException("the absent operator (?~...) has no Java equivalent", onig, i);
            }
            out.append(c);
            i++;
        }
        return out.toString();
    }

    /** Rewrites {@code \p{...}} / {@code \P{...}} at {@code i}; returns the index after it. */
    private static int property(String onig, int i, char kind, StringBuilder out) {
        if (i + 2 >= onig.length() || onig.charAt(i + 2) != '{') {
            out.append('\\').append(kind);
            return i + 2;
        }
        int close = onig.indexOf('}', i + 3);
        if (close < 0) {
            throw new PatternSyntaxException("unclosed \\" + kind + "{", onig, i);
        }
        String name = onig.substring(i + 3, close);
        boolean negate = kind == 'P';
        if (name.startsWith("^")) {
            negate = !negate;
            name = name.substring(1);
        }
        if (!knownToJava(name)) {
            name = "Is" + name;
        }
        out.append('\\').append(negate ? 'P' : 'p').append('{').append(name).append('}');
        return close + 1;
    }

    private static boolean knownToJava(String name) {
        try {
            Pattern.compile("\\p{" + name + "}");
            return true;
        } catch (PatternSyntaxException e) {
            return false;
        }
    }
}

package io.moe4j.generate.constraint;

import io.moe4j.MoeException;
import java.util.ArrayList;
import java.util.List;

/**
 * A regular expression of JSON Schema's {@code pattern} dialect (ECMA-262) as a syntax tree over Unicode code points:
 * literals, {@code .}, classes with ranges and negation, the escapes {@code \d \w \s} (and their negations), {@code
 * \t \n \v \f \r \0 \xHH \\uHHHH \\u{H..} \cX}, groups (plain, {@code (?:)} and named), alternation, and the
 * quantifiers {@code * + ? {n} {n,} {n,m}} (greedy or lazy: the same strings); a surrogate pair written as two
 * {@code \\u} escapes is its one character. {@code ^} may open and {@code $} close each top-level alternative.
 * Refused by name, since they are not regular or not worth an automaton: backreferences, lookaround, inline flags,
 * word boundaries, Unicode property escapes, lone surrogates and anchors anywhere else; what a JavaScript engine
 * refuses too (nothing to repeat, unmatched brackets, a duplicate group name) is named as malformed.
 *
 * <p>A pattern is not anchored unless it says so (a string fits if the expression matches somewhere in it), so an
 * unanchored start or end is matched as any text there. A whole reply's expression ({@link #parseWhole}, vLLM's
 * guided regex) matches the whole text instead. Code points never include the UTF-16 surrogates: a JSON string the
 * matcher accepts holds none alone.
 */
final class SchemaRegex {
    static final int MAX_CODE_POINT = 0x10FFFF;
    /** The most a bounded quantifier may count to. */
    static final int MAX_REPEAT = 1000;
    /**
     * The most groups open at once: the parser and the automaton's construction recurse once a level, and a request's
     * pattern must not overflow the thread's stack.
     */
    static final int MAX_DEPTH = 200;
    /** The most characters of a pattern a message quotes. */
    private static final int QUOTED = 120;

    /** A node of the syntax tree. */
    sealed interface Node permits Chars, Concat, Alt, Repeat {
    }

    /** One code point from a set: sorted, disjoint, non-adjacent inclusive ranges {@code [lo0, hi0, lo1, hi1, ...]}. */
    record Chars(int[] ranges) implements Node {
    }

    /** The parts one after another ({@code parts} empty: the empty string). */
    record Concat(List<Node> parts) implements Node {
    }

    /** Any one of the alternatives. */
    record Alt(List<Node> alternatives) implements Node {
    }

    /** {@code node} from {@code min} to {@code max} times; max -1: without bound. */
    record Repeat(Node node, int min, int max) implements Node {
    }

    static final Chars ANY = new Chars(withoutSurrogates(new int[] {0, MAX_CODE_POINT}));
    private static final Chars DIGIT = new Chars(new int[] {'0', '9'});
    private static final Chars WORD = new Chars(new int[] {'0', '9', 'A', 'Z', '_', '_', 'a', 'z'});
    /** ECMA-262's WhiteSpace and LineTerminator. */
    private static final Chars SPACE = new Chars(normalize(new int[] {'\t', '\r', ' ', ' ', 0xA0, 0xA0, 0x1680, 0x1680,
        0x2000, 0x200A, 0x2028, 0x2029, 0x202F, 0x202F, 0x205F, 0x205F, 0x3000, 0x3000, 0xFEFF, 0xFEFF}));
    /** {@code .}: anything but a line terminator. */
    private static final Chars DOT = new Chars(complement(new int[] {'\n', '\n', '\r', '\r', 0x2028, 0x2029}));

    private final String pattern;
    private final int[] cps;
    private int at;
    /** Groups open at the cursor. */
    private int depth;
    private final java.util.Set<String> groupNames = new java.util.HashSet<>();

    /** What messages call the expression: a schema's pattern at a path, or a request field. */
    private final String subject;

    private SchemaRegex(String pattern, String subject) {
        this.pattern = pattern;
        this.cps = pattern.codePoints().toArray();
        this.subject = subject;
    }

    /**
     * The strings the pattern fits, as a whole-string expression: unanchored ends become any text.
     *
     * @param where the schema path, for messages
     * @throws MoeException naming the pattern, the position and what is not supported or malformed
     */
    static Node parse(String pattern, String where) {
        return parse(pattern, "JSON schema 'pattern' at " + where, false);
    }

    /**
     * The texts the pattern matches as a whole (as vLLM's guided regex and Python's {@code re.fullmatch} read it):
     * a top-level alternative may still open with {@code ^} and close with {@code $}, which change nothing.
     *
     * @param field the request field that holds the pattern, for messages
     */
    static Node parseWhole(String pattern, String field) {
        return parse(pattern, "'" + field + "'", true);
    }

    private static Node parse(String pattern, String subject, boolean whole) {
        SchemaRegex p = new SchemaRegex(pattern, subject);
        // Each top-level alternative has its own anchors: ^a|b$ is (^a)|(b$), and ^$|^\d{5}$ is either.
        List<Node> alternatives = new ArrayList<>();
        do {
            if (!alternatives.isEmpty()) {
                p.at++; // '|'
            }
            boolean anchoredStart = p.peek('^');
            if (anchoredStart) {
                p.at++;
            }
            Node body = p.sequence();
            boolean anchoredEnd = p.peek('$');
            if (anchoredEnd) {
                p.at++;
            }
            List<Node> parts = new ArrayList<>();
            if (!anchoredStart && !whole) {
                parts.add(new Repeat(ANY, 0, -1));
            }
            parts.add(body);
            if (!anchoredEnd && !whole) {
                parts.add(new Repeat(ANY, 0, -1));
            }
            alternatives.add(new Concat(List.copyOf(parts)));
        } while (p.peek('|'));
        if (p.at < p.cps.length) {
            throw p.cps[p.at] == ')' ? p.malformed("an unmatched ')'")
                    : p.error("'" + Character.toString(p.cps[p.at]) + "' here");
        }
        return alternatives.size() == 1 ? alternatives.getFirst() : new Alt(List.copyOf(alternatives));
    }

    private boolean peek(int c) {
        return at < cps.length && cps[at] == c;
    }

    private MoeException error(String what) {
        return new MoeException(subject + " (\"" + quoted() + "\"): " + what
                + " at character " + at + " is not supported");
    }

    /** Not a valid ECMA-262 expression at all (what a JavaScript engine refuses too). */
    private MoeException malformed(String what) {
        return new MoeException(subject + " (\"" + quoted() + "\") is not a valid "
                + "regular expression: " + what + " at character " + at);
    }

    /** The pattern as a message quotes it: a long one's first characters, marked as cut. */
    private String quoted() {
        return cps.length <= QUOTED ? pattern : new String(cps, 0, QUOTED) + "…";
    }

    private Node alternation() {
        List<Node> alternatives = new ArrayList<>();
        alternatives.add(sequence());
        while (peek('|')) {
            at++;
            alternatives.add(sequence());
        }
        return alternatives.size() == 1 ? alternatives.getFirst() : new Alt(List.copyOf(alternatives));
    }

    private Node sequence() {
        List<Node> parts = new ArrayList<>();
        while (at < cps.length && cps[at] != '|' && cps[at] != ')') {
            if (cps[at] == '$' && depth == 0 && (at == cps.length - 1 || cps[at + 1] == '|')) {
                break; // a top-level alternative's closing anchor, read by parse
            }
            Node atom = atom();
            parts.add(quantified(atom));
        }
        return parts.size() == 1 ? parts.getFirst() : new Concat(List.copyOf(parts));
    }

    private Node quantified(Node atom) {
        while (at < cps.length) {
            int min;
            int max;
            int c = cps[at];
            if (c == '*' || c == '+' || c == '?') {
                min = c == '+' ? 1 : 0;
                max = c == '?' ? 1 : -1;
                at++;
            } else if (c == '{' && bounds() != null) {
                int[] b = bounds();
                min = b[0];
                max = b[1];
                at = b[2];
            } else {
                return atom;
            }
            if (max >= 0 && max < min) {
                throw malformed("a quantifier {" + min + "," + max + "} whose maximum is below its minimum");
            }
            if (min > MAX_REPEAT || max > MAX_REPEAT) {
                throw error("a count above " + MAX_REPEAT);
            }
            if (peek('?')) {
                at++; // lazy: the same strings
            }
            atom = new Repeat(atom, min, max);
            if (at < cps.length && (cps[at] == '*' || cps[at] == '+' || cps[at] == '?'
                    || (cps[at] == '{' && bounds() != null))) {
                throw malformed("a quantifier after a quantifier (nothing to repeat)");
            }
        }
        return atom;
    }

    /** {@code {n}}, {@code {n,}} or {@code {n,m}} at the cursor as {min, max, end}; null when it is a literal brace. */
    private int[] bounds() {
        int i = at + 1;
        int start = i;
        long min = 0;
        while (i < cps.length && cps[i] >= '0' && cps[i] <= '9') {
            min = Math.min(min * 10 + (cps[i++] - '0'), Integer.MAX_VALUE);
        }
        if (i == start) {
            return null;
        }
        long max = min;
        if (i < cps.length && cps[i] == ',') {
            i++;
            int digits = i;
            max = 0;
            while (i < cps.length && cps[i] >= '0' && cps[i] <= '9') {
                max = Math.min(max * 10 + (cps[i++] - '0'), Integer.MAX_VALUE);
            }
            if (i == digits) {
                max = -1;
            }
        }
        if (i >= cps.length || cps[i] != '}') {
            return null;
        }
        return new int[] {(int) min, (int) max, i + 1};
    }

    private Node atom() {
        int c = cps[at];
        switch (c) {
            case '(' -> {
                at++;
                if (peek('?')) {
                    if (at + 1 < cps.length && cps[at + 1] == ':') {
                        at += 2;
                    } else if (at + 1 < cps.length && cps[at + 1] == '<' && at + 2 < cps.length
                            && cps[at + 2] != '=' && cps[at + 2] != '!') {
                        int close = indexOf('>', at + 2);
                        if (close < 0) {
                            throw malformed("a group name without its '>'");
                        }
                        String name = new String(cps, at + 2, close - at - 2);
                        if (!groupNames.add(name)) {
                            throw malformed("a second group named '" + name + "'");
                        }
                        at = close + 1;
                    } else {
                        int next = at + 1 < cps.length ? cps[at + 1] : -1;
                        throw switch (next) {
                            case '=', '!', '<' -> error("lookaround '(?" + Character.toString(next) + "'");
                            case 'P' -> error("Python's named group '(?P' (ECMA-262 writes '(?<name>')");
                            default -> error("inline flags or an unknown group '(?"
                                    + (next < 0 ? "" : Character.toString(next)) + "'");
                        };
                    }
                }
                if (++depth > MAX_DEPTH) {
                    throw error("groups nested more than " + MAX_DEPTH + " deep");
                }
                Node inner = alternation();
                depth--;
                if (!peek(')')) {
                    throw malformed("a '(' without its ')'");
                }
                at++;
                return inner;
            }
            case '[' -> {
                return charClass();
            }
            case '.' -> {
                at++;
                return DOT;
            }
            case '\\' -> {
                at++;
                return escape(false);
            }
            case '^' -> throw error("'^' inside (anchors may open and close each top-level alternative only)");
            case '$' -> throw error("'$' inside (anchors may open and close each top-level alternative only)");
            case '*', '+', '?' -> throw malformed("a quantifier '" + Character.toString(c)
                    + "' with nothing to repeat");
            default -> {
                if (c == '{' && bounds() != null) {
                    throw malformed("a quantifier with nothing to repeat");
                }
                at++;
                return single(c);
            }
        }
    }

    private int indexOf(int c, int from) {
        for (int i = from; i < cps.length; i++) {
            if (cps[i] == c) {
                return i;
            }
        }
        return -1;
    }

    private static Chars single(int c) {
        return new Chars(withoutSurrogates(new int[] {c, c}));
    }

    /** After a backslash: a set (inside a class too), or one code point as a one-point set. */
    private Chars escape(boolean inClass) {
        if (at >= cps.length) {
            throw malformed("a '\\' at the end");
        }
        int c = cps[at++];
        switch (c) {
            case 'd' -> {
                return DIGIT;
            }
            case 'D' -> {
                return new Chars(complement(DIGIT.ranges()));
            }
            case 'w' -> {
                return WORD;
            }
            case 'W' -> {
                return new Chars(complement(WORD.ranges()));
            }
            case 's' -> {
                return SPACE;
            }
            case 'S' -> {
                return new Chars(complement(SPACE.ranges()));
            }
            case 't' -> {
                return single('\t');
            }
            case 'n' -> {
                return single('\n');
            }
            case 'v' -> {
                return single(0x0B);
            }
            case 'f' -> {
                return single('\f');
            }
            case 'r' -> {
                return single('\r');
            }
            case '0' -> {
                if (peek('0') || (at < cps.length && cps[at] >= '1' && cps[at] <= '9')) {
                    throw error("an octal escape");
                }
                return single(0);
            }
            case 'b' -> {
                if (inClass) {
                    return single('\b');
                }
                throw error("a word boundary '\\b'");
            }
            case 'B' -> throw error("a word boundary '\\B'");
            case 'x' -> {
                return single(hex(2));
            }
            case 'u' -> {
                if (peek('{')) {
                    int close = indexOf('}', at);
                    if (close < 0 || close == at + 1 || close - at - 1 > 6) {
                        throw malformed("a '\\u{...}' without its hex digits and '}'");
                    }
                    at++;
                    int v = hex(close - at);
                    at = close + 1;
                    if (v > MAX_CODE_POINT) {
                        throw error("a code point above U+10FFFF");
                    }
                    return single(v);
                }
                int unit = hex(4);
                if (unit >= 0xD800 && unit <= 0xDBFF && at + 5 < cps.length && cps[at] == '\\' && cps[at + 1] == 'u') {
                    // a surrogate pair written as two escapes is the one character it encodes
                    int save = at;
                    at += 2;
                    int low = hex(4);
                    if (low >= 0xDC00 && low <= 0xDFFF) {
                        return single(Character.toCodePoint((char) unit, (char) low));
                    }
                    at = save;
                }
                if (unit >= 0xD800 && unit <= 0xDFFF) {
                    throw error("a lone surrogate escape (a JSON string holds none; write the character or "
                            + "\\u{...})");
                }
                return single(unit);
            }
            case 'c' -> {
                if (at < cps.length && Character.isLetter(cps[at]) && cps[at] < 0x80) {
                    return single(cps[at++] % 32);
                }
                throw malformed("a '\\c' without its letter");
            }
            case 'p', 'P' -> throw error("a Unicode property escape '\\" + Character.toString(c) + "'");
            case 'k' -> throw error("a named backreference '\\k'");
            default -> {
                if (c >= '1' && c <= '9') {
                    throw error("a backreference '\\" + Character.toString(c) + "'");
                }
                if (Character.isLetterOrDigit(c)) {
                    throw error("an unknown escape '\\" + Character.toString(c) + "'");
                }
                return single(c); // an escaped syntax character stands for itself
            }
        }
    }

    private int hex(int digits) {
        int v = 0;
        for (int i = 0; i < digits; i++) {
            int d = at < cps.length ? Character.digit(cps[at], 16) : -1;
            if (d < 0) {
                throw malformed("an escape without its " + digits + " hex digits");
            }
            v = v * 16 + d;
            at++;
        }
        return v;
    }

    private Chars charClass() {
        at++; // '['
        boolean negated = peek('^');
        if (negated) {
            at++;
        }
        List<int[]> parts = new ArrayList<>();
        while (!peek(']')) {
            if (at >= cps.length) {
                throw malformed("a '[' without its ']'");
            }
            Chars first = classAtom();
            if (peek('-') && at + 1 < cps.length && cps[at + 1] != ']') {
                at++;
                Chars last = classAtom();
                if (!isPoint(first) || !isPoint(last)) {
                    throw error("a class range with a set at one end");
                }
                int lo = first.ranges()[0];
                int hi = last.ranges()[0];
                if (hi < lo) {
                    throw malformed("a class range out of order");
                }
                parts.add(withoutSurrogates(new int[] {lo, hi}));
            } else {
                parts.add(first.ranges());
            }
        }
        at++; // ']'
        int total = parts.stream().mapToInt(p -> p.length).sum();
        int[] all = new int[total];
        int k = 0;
        for (int[] p : parts) {
            System.arraycopy(p, 0, all, k, p.length);
            k += p.length;
        }
        int[] set = normalize(all);
        return new Chars(negated ? complement(set) : set);
    }

    private static boolean isPoint(Chars c) {
        return c.ranges().length == 2 && c.ranges()[0] == c.ranges()[1];
    }

    private Chars classAtom() {
        int c = cps[at];
        if (c == '\\') {
            at++;
            return escape(true);
        }
        at++;
        return single(c);
    }

    /** The ranges sorted and merged (touching ranges joined). */
    static int[] normalize(int[] ranges) {
        int n = ranges.length / 2;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        java.util.Arrays.sort(order, (x, y) -> Integer.compare(ranges[2 * x], ranges[2 * y]));
        int[] out = new int[ranges.length];
        int k = 0;
        for (int i : order) {
            int lo = ranges[2 * i];
            int hi = ranges[2 * i + 1];
            if (k > 0 && lo <= out[k - 1] + 1) {
                out[k - 1] = Math.max(out[k - 1], hi);
            } else {
                out[k++] = lo;
                out[k++] = hi;
            }
        }
        return java.util.Arrays.copyOf(out, k);
    }

    /** Every code point but the set's, surrogates excluded. */
    static int[] complement(int[] set) {
        int[] out = new int[set.length + 2];
        int k = 0;
        int next = 0;
        for (int i = 0; i < set.length; i += 2) {
            if (set[i] > next) {
                out[k++] = next;
                out[k++] = set[i] - 1;
            }
            next = set[i + 1] + 1;
        }
        if (next <= MAX_CODE_POINT) {
            out[k++] = next;
            out[k++] = MAX_CODE_POINT;
        }
        return withoutSurrogates(java.util.Arrays.copyOf(out, k));
    }

    /** The set without U+D800..U+DFFF. */
    static int[] withoutSurrogates(int[] set) {
        List<Integer> out = new ArrayList<>();
        for (int i = 0; i < set.length; i += 2) {
            int lo = set[i];
            int hi = set[i + 1];
            if (hi < 0xD800 || lo > 0xDFFF) {
                out.add(lo);
                out.add(hi);
                continue;
            }
            if (lo < 0xD800) {
                out.add(lo);
                out.add(0xD7FF);
            }
            if (hi > 0xDFFF) {
                out.add(0xE000);
                out.add(hi);
            }
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }
}

package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Splits a template into text and tag tokens with the whitespace rules transformers renders chat templates with:
 * {@code trim_blocks} and {@code lstrip_blocks} on, {@code keep_trailing_newline} off, and the {@code -} / {@code +}
 * markers on tags. The rules follow Jinja's lexer:
 * <ul>
 *   <li>{@code -} on the opening side strips all whitespace before the tag, {@code -} on the closing side all
 *       whitespace after it;</li>
 *   <li>trim_blocks drops the first newline after a block or comment tag (not after {@code }}}), unless it ends
 *       in {@code +%}};</li>
 *   <li>lstrip_blocks drops spaces and tabs between the start of a line and a block or comment tag (not a
 *       {@code {{}), unless it opens with {@code {%+};</li>
 *   <li>one newline at the very end of the template is dropped; {@code \r\n} and {@code \r} read as {@code \n}.</li>
 * </ul>
 */
final class Lexer {
    private static final Pattern RAW_START = Pattern.compile("\\G\\s*raw\\s*([-+]?)%}");
    private static final Pattern RAW_END = Pattern.compile("\\{%([-+]?)\\s*endraw\\s*([-+]?)%}");
    private static final String[] OPERATORS = {
        "//", "**", "==", "!=", "<=", ">=",
        "+", "-", "/", "*", "%", "~", "[", "]", "(", ")", "{", "}", "<", ">", "=", ".", ":", "|", ",", ";"
    };

    private final String name;
    private final String src;
    private final int[] lineStarts;
    private final List<Token> out = new ArrayList<>();
    private int pos;

    Lexer(String source, String name) {
        this.name = name;
        String s = source.replace("\r\n", "\n").replace('\r', '\n');
        if (s.endsWith("\n")) {
            s = s.substring(0, s.length() - 1);
        }
        this.src = s;
        List<Integer> starts = new ArrayList<>();
        starts.add(0);
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) == '\n') {
                starts.add(i + 1);
            }
        }
        lineStarts = starts.stream().mapToInt(Integer::intValue).toArray();
    }

    List<Token> tokenize() {
        while (pos < src.length()) {
            int tag = nextTagStart(pos);
            if (tag < 0) {
                emitText(src.substring(pos), pos);
                pos = src.length();
                break;
            }
            char kind = src.charAt(tag + 1);
            char sign = tag + 2 < src.length() ? src.charAt(tag + 2) : 0;
            boolean hasSign = sign == '-' || sign == '+';
            String text = src.substring(pos, tag);
            if (sign == '-') {
                text = Py.rstrip(text, null);
            } else if (sign != '+' && kind != '{') {
                text = lstripBlock(text, pos);
            }
            emitText(text, pos);
            int p = tag + 2 + (hasSign ? 1 : 0);
            switch (kind) {
                case '#' -> comment(tag, p);
                case '%' -> {
                    Matcher raw = RAW_START.matcher(src);
                    if (raw.find(p) && raw.start() == p) {
                        raw(tag, raw);
                    } else {
                        out.add(new Token(Token.Kind.BLOCK_BEGIN, "{%", lineOf(tag)));
                        pos = expression(p, true);
                    }
                }
                default -> {
                    out.add(new Token(Token.Kind.VAR_BEGIN, "{{", lineOf(tag)));
                    pos = expression(p, false);
                }
            }
        }
        out.add(new Token(Token.Kind.EOF, "", lineOf(src.length())));
        return out;
    }

    private int nextTagStart(int from) {
        int i = from;
        while (true) {
            i = src.indexOf('{', i);
            if (i < 0 || i + 1 >= src.length()) {
                return -1;
            }
            char c = src.charAt(i + 1);
            if (c == '{' || c == '%' || c == '#') {
                return i;
            }
            i++;
        }
    }

    /** lstrip_blocks: whitespace between the last line start and the tag goes, when nothing else is there. */
    private String lstripBlock(String text, int textStart) {
        int lpos = text.lastIndexOf('\n') + 1;
        boolean lineStarting = textStart == 0 || src.charAt(textStart - 1) == '\n';
        if (lpos > 0 || lineStarting) {
            String tail = text.substring(lpos);
            if (!tail.isEmpty() && Py.isAllSpace(tail)) {
                return text.substring(0, lpos);
            }
        }
        return text;
    }

    private void emitText(String text, int at) {
        if (!text.isEmpty()) {
            out.add(new Token(Token.Kind.TEXT, text, lineOf(at)));
        }
    }

    private void comment(int tag, int p) {
        if (p >= src.length()) {
            // Jinja's lexer stops at the end of the source right after an opening '{#' without complaint.
            pos = src.length();
            return;
        }
        int end = src.indexOf("#}", p);
        if (end < 0) {
            throw new JinjaSyntaxException(name, lineOf(tag), "unclosed comment '{#'");
        }
        char before = end > p ? src.charAt(end - 1) : 0;
        pos = afterClose(end + 2, before, true);
    }

    /** Position after a closing delimiter, with its whitespace control applied. */
    private int afterClose(int after, char sign, boolean trimBlocks) {
        if (sign == '-') {
            while (after < src.length() && Py.isSpace(src.charAt(after))) {
                after++;
            }
        } else if (sign != '+' && trimBlocks && after < src.length() && src.charAt(after) == '\n') {
            after++;
        }
        return after;
    }

    private void raw(int tag, Matcher start) {
        int bodyStart = afterClose(start.end(), start.group(1).isEmpty() ? 0 : start.group(1).charAt(0), true);
        if (bodyStart >= src.length()) {
            // As with a comment, Jinja's lexer accepts a raw block opened at the very end of the source.
            pos = src.length();
            return;
        }
        Matcher end = RAW_END.matcher(src);
        if (!end.find(bodyStart)) {
            throw new JinjaSyntaxException(name, lineOf(tag), "'raw' block is never closed by 'endraw'");
        }
        String body = src.substring(bodyStart, end.start());
        String open = end.group(1);
        if (open.equals("-")) {
            body = Py.rstrip(body, null);
        } else if (!open.equals("+")) {
            body = lstripBlock(body, bodyStart);
        }
        emitText(body, bodyStart);
        String close = end.group(2);
        pos = afterClose(end.end(), close.isEmpty() ? 0 : close.charAt(0), true);
    }

    /** Tokens of an expression up to the closing delimiter; returns the position after it. */
    private int expression(int p, boolean block) {
        int depth = 0;
        String close = block ? "%}" : "}}";
        Token previous = null;
        while (true) {
            while (p < src.length() && Py.isSpace(src.charAt(p))) {
                p++;
            }
            if (p >= src.length()) {
                throw new JinjaSyntaxException(name, lineOf(p), "unexpected end of template, expected '" + close + "'");
            }
            if (depth == 0) {
                if (src.startsWith("-" + close, p)) {
                    out.add(new Token(block ? Token.Kind.BLOCK_END : Token.Kind.VAR_END, close, lineOf(p)));
                    return afterClose(p + 3, '-', block);
                }
                if (block && src.startsWith("+" + close, p)) {
                    out.add(new Token(Token.Kind.BLOCK_END, close, lineOf(p)));
                    return p + 3;
                }
                if (src.startsWith(close, p)) {
                    out.add(new Token(block ? Token.Kind.BLOCK_END : Token.Kind.VAR_END, close, lineOf(p)));
                    return afterClose(p + 2, (char) 0, block);
                }
            }
            char c = src.charAt(p);
            int line = lineOf(p);
            Token t;
            if (c == '\'' || c == '"') {
                int end = stringEnd(p, c);
                t = new Token(Token.Kind.STRING, StringEscapes.decode(src.substring(p + 1, end)), line);
                p = end + 1;
            } else if (Character.isDigit(c)) {
                int end = numberEnd(p, previous != null && previous.isOp("."));
                String digits = src.substring(p, end);
                boolean isFloat = digits.indexOf('.') >= 0 || digits.indexOf('e') >= 0 || digits.indexOf('E') >= 0;
                t = new Token(isFloat ? Token.Kind.FLOAT : Token.Kind.INTEGER, digits.replace("_", ""), line);
                p = end;
            } else if (Character.isLetter(c) || c == '_') {
                int end = p + 1;
                while (end < src.length() && (Character.isLetterOrDigit(src.charAt(end)) || src.charAt(end) == '_')) {
                    end++;
                }
                t = new Token(Token.Kind.NAME, src.substring(p, end), line);
                p = end;
            } else {
                String op = null;
                for (String o : OPERATORS) {
                    if (src.startsWith(o, p)) {
                        op = o;
                        break;
                    }
                }
                if (op == null) {
                    throw new JinjaSyntaxException(name, line, "unexpected character '" + c + "'");
                }
                switch (op) {
                    case "(", "[", "{" -> depth++;
                    case ")", "]", "}" -> {
                        if (depth == 0) {
                            throw new JinjaSyntaxException(name, line, "unexpected '" + op + "'");
                        }
                        depth--;
                    }
                    default -> { }
                }
                t = new Token(Token.Kind.OPERATOR, op, line);
                p += op.length();
            }
            out.add(t);
            previous = t;
        }
    }

    private int stringEnd(int p, char quote) {
        int i = p + 1;
        while (i < src.length()) {
            char c = src.charAt(i);
            if (c == '\\') {
                i += 2;
            } else if (c == quote) {
                return i;
            } else {
                i++;
            }
        }
        throw new JinjaSyntaxException(name, lineOf(p), "unterminated string literal");
    }

    private int numberEnd(int p, boolean afterDot) {
        int i = digitsEnd(p);
        if (afterDot) {
            return i;
        }
        if (i + 1 < src.length() && src.charAt(i) == '.' && Character.isDigit(src.charAt(i + 1))) {
            i = digitsEnd(i + 1);
        }
        if (i < src.length() && (src.charAt(i) == 'e' || src.charAt(i) == 'E')) {
            int j = i + 1;
            if (j < src.length() && (src.charAt(j) == '+' || src.charAt(j) == '-')) {
                j++;
            }
            if (j < src.length() && Character.isDigit(src.charAt(j))) {
                i = digitsEnd(j);
            }
        }
        return i;
    }

    private int digitsEnd(int p) {
        int i = p;
        while (i < src.length() && (Character.isDigit(src.charAt(i))
                || (src.charAt(i) == '_' && i + 1 < src.length() && Character.isDigit(src.charAt(i + 1))))) {
            i++;
        }
        return i;
    }

    private int lineOf(int offset) {
        int lo = 0;
        int hi = lineStarts.length - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (lineStarts[mid] <= offset) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo + 1;
    }
}

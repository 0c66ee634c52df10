package io.moe4j.text.chat.jinja;

/** One lexical unit of a template; {@code value} is the decoded text for strings, the digits for numbers. */
record Token(Kind kind, String value, int line) {
    enum Kind { TEXT, VAR_BEGIN, VAR_END, BLOCK_BEGIN, BLOCK_END, NAME, STRING, INTEGER, FLOAT, OPERATOR, EOF }

    boolean is(Kind k, String v) {
        return kind == k && value.equals(v);
    }

    boolean isOp(String v) {
        return is(Kind.OPERATOR, v);
    }

    boolean isName(String v) {
        return is(Kind.NAME, v);
    }

    String describe() {
        return switch (kind) {
            case EOF -> "end of template";
            case TEXT -> "template text";
            case VAR_BEGIN -> "'{{'";
            case VAR_END -> "'}}'";
            case BLOCK_BEGIN -> "'{%'";
            case BLOCK_END -> "'%}'";
            case STRING -> "string literal";
            default -> "'" + value + "'";
        };
    }
}

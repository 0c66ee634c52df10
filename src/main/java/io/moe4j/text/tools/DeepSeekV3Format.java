package io.moe4j.text.tools;

import java.util.List;

/**
 * DeepSeek-V3's calls, as its chat template renders them:
 * {@code <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n```json\nARGS\n```<｜tool▁call▁end｜>}, further
 * calls after a newline, {@code <｜tool▁calls▁end｜>} after the run. The later form without the type and the fence
 * ({@code <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>ARGS<｜tool▁call▁end｜>}, DeepSeek-V3.1) is read too.
 */
final class DeepSeekV3Format implements ToolCallFormat {
    static final String CALLS_BEGIN = "<｜tool▁calls▁begin｜>";
    static final String CALLS_END = "<｜tool▁calls▁end｜>";
    static final String CALL_BEGIN = "<｜tool▁call▁begin｜>";
    static final String CALL_END = "<｜tool▁call▁end｜>";
    static final String SEP = "<｜tool▁sep｜>";

    @Override
    public List<String> families() {
        return List.of("deepseek-v3", "deepseek_v3", "deepseek-r1", "deepseek-v3.1");
    }

    @Override
    public String callStart() {
        return CALL_BEGIN;
    }

    @Override
    public String callEnd() {
        return CALL_END;
    }

    @Override
    public List<String> wrappers() {
        return List.of(CALLS_BEGIN, CALLS_END);
    }

    @Override
    public Call parseBody(String body) {
        int sep = body.indexOf(SEP);
        if (sep < 0) {
            return null;
        }
        String head = body.substring(0, sep).strip();
        String rest = body.substring(sep + SEP.length());
        String name;
        String arguments;
        if (head.equals("function")) {
            int newline = rest.indexOf('\n');
            if (newline < 0) {
                return null;
            }
            name = rest.substring(0, newline).strip();
            arguments = unfence(rest.substring(newline + 1));
        } else {
            name = head;
            arguments = unfence(rest);
        }
        String object = arguments == null ? null : JsonArguments.object(arguments);
        if (name.isEmpty() || object == null || name.contains(SEP)) {
            return null;
        }
        return new Call(name, object);
    }

    /** The text inside a ```json fence when there is one, else the text; null for a fence left open. */
    private static String unfence(String text) {
        String t = text.strip();
        if (!t.startsWith("```")) {
            return t;
        }
        int open = t.indexOf('\n');
        if (open < 0 || !t.endsWith("```") || t.length() < open + 4) {
            return null;
        }
        return t.substring(open + 1, t.length() - 3);
    }
}

package io.moe4j.text.tools;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.util.List;

/**
 * Qwen3's (and Qwen2.5's, Hermes') calls: {@code <tool_call>\n{"name": ..., "arguments": {...}}\n</tool_call>}, as
 * its chat template renders them, one block per call. Arguments given as a JSON string holding an object are taken
 * too; {@code parameters} is read where {@code arguments} is absent.
 */
final class HermesFormat implements ToolCallFormat {

    @Override
    public List<String> families() {
        return List.of("qwen3", "qwen3_moe", "qwen2", "qwen2_moe", "hermes");
    }

    @Override
    public String callStart() {
        return "<tool_call>";
    }

    @Override
    public String callEnd() {
        return "</tool_call>";
    }

    @Override
    public Call parseBody(String body) {
        String text = body.strip();
        String name = null;
        String arguments = null;
        String parameters = null;
        try (JsonParser p = JsonArguments.FACTORY.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String field = p.currentName();
                JsonToken value = p.nextToken();
                if ((field.equals("arguments") || field.equals("parameters"))) {
                    String args = value == JsonToken.START_OBJECT ? rawObject(p, text)
                            : value == JsonToken.VALUE_STRING ? JsonArguments.object(p.getText()) : null;
                    if (args == null) {
                        return null;
                    }
                    if (field.equals("arguments")) {
                        arguments = args;
                    } else {
                        parameters = args;
                    }
                } else if (field.equals("name") && value == JsonToken.VALUE_STRING) {
                    name = p.getText();
                } else {
                    p.skipChildren();
                }
            }
            if (p.currentToken() != JsonToken.END_OBJECT || p.nextToken() != null) {
                return null;
            }
        } catch (IOException e) {
            return null;
        }
        String args = arguments != null ? arguments : parameters;
        if (name == null || name.isBlank() || args == null) {
            return null;
        }
        return new Call(name, args);
    }

    /** The object the parser stands at, as the model wrote it. */
    private static String rawObject(JsonParser p, String text) throws IOException {
        int start = (int) p.currentTokenLocation().getCharOffset();
        p.skipChildren();
        int end = (int) p.currentLocation().getCharOffset();
        return text.substring(start, end);
    }
}

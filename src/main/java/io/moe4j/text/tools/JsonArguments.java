package io.moe4j.text.tools;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;

/** Checks that arguments text is one JSON object and nothing else. */
final class JsonArguments {
    static final JsonFactory FACTORY = new JsonFactory();

    private JsonArguments() {
    }

    /** The text trimmed when it holds exactly one JSON object, else null. */
    static String object(String text) {
        String t = text.strip();
        try (JsonParser p = FACTORY.createParser(t)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                return null;
            }
            p.skipChildren();
            return p.nextToken() == null ? t : null;
        } catch (IOException e) {
            return null;
        }
    }
}

package io.moe4j.config;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonProcessingException;

import java.io.IOException;

/** One line for a JSON file or text that does not parse: Jackson's own reason and where, without its source dump. */
public final class JsonErrors {
    private JsonErrors() {
    }

    /** e.g. {@code Unexpected character ('}' (code 125)): was expecting double-quote (line 3, column 2)}. */
    public static String describe(IOException e) {
        if (!(e instanceof JsonProcessingException j)) {
            return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        }
        String reason = j.getOriginalMessage() == null ? j.getClass().getSimpleName() : j.getOriginalMessage();
        reason = reason.replace('\n', ' ');
        // Jackson's advice to the programmer (": enable `JsonReadFeature.ALLOW_...` to allow") is not the user's
        reason = reason.replaceAll(":?\\s*enable `?JsonReadFeature\\.[A-Z_]+`? to allow", "");
        JsonLocation at = j.getLocation();
        return at == null || at.getLineNr() < 0 ? reason
                : reason + " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")";
    }
}

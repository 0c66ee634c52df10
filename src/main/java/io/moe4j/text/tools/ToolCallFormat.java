package io.moe4j.text.tools;

import java.util.List;

/**
 * How one model family writes a tool call in its output: the markers around each call, the body between them, and
 * wrapper markers around a run of calls that are structure, not content.
 */
interface ToolCallFormat {

    /** The family names this format is found under ({@link ToolCallParser#forFamily}). */
    List<String> families();

    String callStart();

    String callEnd();

    /** Markers outside calls that only frame them (dropped from the content); none by default. */
    default List<String> wrappers() {
        return List.of();
    }

    /** The name and arguments of a call's body (the text between the markers), or null when it is malformed. */
    Call parseBody(String body);

    /** A call's name and its arguments' JSON object text. */
    record Call(String name, String arguments) {
    }
}

package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The last responses answered with {@code store} (OpenAI's default), in memory: a later request continues one by
 * its {@code previous_response_id}, and {@code GET /v1/responses/ID} reads one back. The oldest goes when full; a
 * restart forgets them all. Thread-safe.
 */
final class ResponsesStore {
    /**
     * A stored response and the conversation it ends: the chat messages of every input so far and of its output, the
     * instructions left out (a request's own instructions do not carry over to the next, as in OpenAI's API).
     */
    record Stored(JsonNode response, ArrayNode conversation) {
    }

    private final int capacity;
    private final Map<String, Stored> stored = new LinkedHashMap<>();

    ResponsesStore(int capacity) {
        this.capacity = capacity;
    }

    int capacity() {
        return capacity;
    }

    synchronized void put(String id, Stored response) {
        stored.put(id, response);
        while (stored.size() > capacity) {
            stored.remove(stored.keySet().iterator().next());
        }
    }

    /** The stored response of that id, or null. */
    synchronized Stored get(String id) {
        return stored.get(id);
    }
}

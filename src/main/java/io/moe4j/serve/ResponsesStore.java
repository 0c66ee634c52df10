package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The last responses answered with {@code store} (OpenAI's default), in memory: a later request continues one by
 * its {@code previous_response_id}, {@code GET /v1/responses/ID} reads one back and {@code DELETE} forgets it. The
 * oldest goes when full (a count, and a budget of JSON characters); a restart forgets them all. Thread-safe.
 */
final class ResponsesStore {
    /**
     * A stored response and the conversation it ends: the chat messages of every input so far and of its output, the
     * instructions left out (a request's own instructions do not carry over to the next, as in OpenAI's API).
     */
    record Stored(JsonNode response, ArrayNode conversation) {
    }

    private final int capacity;
    /** The most characters of stored JSON (each conversation holds all of its earlier turns: long chains add up). */
    private final long maxChars;
    private final Map<String, Stored> stored = new LinkedHashMap<>();
    private final Map<String, Long> sizes = new java.util.HashMap<>();
    private long chars;

    ResponsesStore(int capacity, long maxChars) {
        this.capacity = capacity;
        this.maxChars = maxChars;
    }

    int capacity() {
        return capacity;
    }

    /** Keeps a response, dropping the oldest while more are kept than the capacity or their JSON than the budget. */
    synchronized void put(String id, Stored response) {
        long size = response.response().toString().length() + response.conversation().toString().length();
        stored.put(id, response);
        sizes.put(id, size);
        chars += size;
        while (stored.size() > capacity || (chars > maxChars && stored.size() > 1)) {
            String oldest = stored.keySet().iterator().next();
            stored.remove(oldest);
            chars -= sizes.remove(oldest);
        }
    }

    /** Forgets the response of that id; whether it was stored. */
    synchronized boolean remove(String id) {
        if (stored.remove(id) == null) {
            return false;
        }
        chars -= sizes.remove(id);
        return true;
    }

    /** The stored response of that id, or null. */
    synchronized Stored get(String id) {
        return stored.get(id);
    }
}

package io.moe4j.serve;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The store keeps the newest responses within its count and its budget of JSON characters. */
class ResponsesStoreTest {
    private static ResponsesStore.Stored stored(int chars) {
        var conversation = JsonNodeFactory.instance.arrayNode();
        conversation.addObject().put("role", "user").put("content", "x".repeat(chars));
        return new ResponsesStore.Stored(JsonNodeFactory.instance.objectNode(), conversation);
    }

    @Test
    void theOldestGoFirstByCountAndBySize() {
        ResponsesStore store = new ResponsesStore(3, 10_000);
        for (int i = 0; i < 4; i++) {
            store.put("r" + i, stored(10));
        }
        assertThat(store.get("r0")).isNull();
        assertThat(store.get("r1")).isNotNull();
        store.put("big", stored(9_000));
        assertThat(store.get("r1")).as("over the budget: the oldest went").isNull();
        assertThat(store.get("big")).isNotNull();
        store.put("huge", stored(50_000));
        assertThat(store.get("huge")).as("the newest stays, even alone over the budget").isNotNull();
        assertThat(store.get("big")).isNull();
    }
}

package io.moe4j.serve;

import io.moe4j.generate.Conversation;

import java.util.ArrayList;
import java.util.List;

/**
 * Finished sequences kept with their KV caches, each with the tokens it holds: a new request takes the one that
 * shares the longest start with its prompt, rewinds it to that shared start and feeds only the rest. An agent resends
 * its whole conversation every turn, and on a CPU its prefill is what it waits for. The least recently kept sequence
 * is closed when the cache is full. Used on the scheduler's engine thread only.
 */
final class PrefixCache implements AutoCloseable {
    /** A kept sequence and the tokens it holds. */
    record Entry(StepModel.Sequence sequence, int[] tokens) {
    }

    /** A taken sequence, rewound to hold the first {@code shared} tokens of the prompt. */
    record Hit(StepModel.Sequence sequence, int shared) {
    }

    private final int capacity;
    /** Oldest first. */
    private final List<Entry> entries = new ArrayList<>();

    PrefixCache(int capacity) {
        this.capacity = capacity;
    }

    boolean enabled() {
        return capacity > 0;
    }

    /** Keeps a finished sequence (closing the oldest kept one when full), or closes it when the cache keeps none. */
    void keep(StepModel.Sequence sequence, int[] tokens) {
        if (capacity == 0 || tokens.length == 0) {
            sequence.close();
            return;
        }
        entries.add(new Entry(sequence, tokens));
        while (entries.size() > capacity) {
            entries.removeFirst().sequence().close();
        }
    }

    /**
     * The kept sequence sharing the longest start with {@code prompt}, rewound to it and no longer kept; null when
     * none shares enough. A sequence is taken only for at least half of what it holds: a request sharing just a chat
     * template's header would otherwise spend a conversation's long prefix for a few tokens. One that cannot rewind
     * that far (a sliding-window layer has dropped the rows) is closed, and the next best is tried. At least one
     * prompt token is left to feed, since the step that feeds it gives the next token's logits.
     */
    Hit take(int[] prompt) {
        while (true) {
            int best = -1;
            int bestShared = 0;
            for (int i = 0; i < entries.size(); i++) {
                int[] held = entries.get(i).tokens();
                int shared = Math.min(Conversation.sharedPrefix(held, prompt), prompt.length - 1);
                if (shared > bestShared && 2L * shared >= held.length) {
                    best = i;
                    bestShared = shared;
                }
            }
            if (best < 0) {
                return null;
            }
            Entry e = entries.remove(best);
            if (e.sequence().rewind(bestShared)) {
                return new Hit(e.sequence(), bestShared);
            }
            e.sequence().close();
        }
    }

    int size() {
        return entries.size();
    }

    /** Closes every kept sequence. */
    @Override
    public void close() {
        for (Entry e : entries) {
            e.sequence().close();
        }
        entries.clear();
    }
}

package io.moe4j.serve;

import io.moe4j.generate.Conversation;

import java.util.ArrayList;
import java.util.List;

/**
 * Finished sequences kept with their KV caches, each with the tokens it holds: a new request takes (or copies) the one
 * that shares the longest start with its prompt, at that shared start, and feeds only the rest. An agent resends
 * its whole conversation every turn, and on a CPU its prefill is what it waits for. The least recently kept sequence
 * is closed when the cache is full. Used on the scheduler's engine thread only.
 */
final class PrefixCache implements AutoCloseable {
    /** A kept sequence and the tokens it holds. */
    record Entry(StepModel.Sequence sequence, int[] tokens) {
    }

    /**
     * A sequence holding the first {@code shared} tokens of the prompt: a kept one taken and rewound, or a copy of one
     * ({@code copied}).
     */
    record Hit(StepModel.Sequence sequence, int shared, boolean copied) {
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
     * A sequence holding the longest start that {@code prompt} shares with a kept one; null when none shares enough.
     * A kept sequence sharing at least half of what it holds (the next turn of its conversation, or the same request
     * again) is taken: rewound to the shared start and no longer kept; one that cannot rewind that far (a
     * sliding-window layer has dropped the rows) is closed, and the next best is tried. One sharing less (a system
     * prompt and tools that many requests start with) stays kept and is forked at the shared start, where the model
     * can copy a sequence and at least {@value #FORK_LEAST} tokens are shared: concurrent requests then each get a
     * copy instead of feeding the prefix again. At least one prompt token is left to feed, since the step that feeds
     * it gives the next token's logits.
     */
    Hit take(int[] prompt) {
        while (true) {
            int best = -1;
            int bestShared = 0;
            for (int i = 0; i < entries.size(); i++) {
                int shared = Math.min(Conversation.sharedPrefix(entries.get(i).tokens(), prompt), prompt.length - 1);
                if (shared > bestShared) {
                    best = i;
                    bestShared = shared;
                }
            }
            if (best < 0) {
                return null;
            }
            Entry e = entries.get(best);
            if (2L * bestShared < e.tokens().length) {
                if (bestShared < FORK_LEAST) {
                    return null;
                }
                StepModel.Sequence copy = e.sequence().fork(bestShared);
                if (copy == null) {
                    return null;
                }
                // the most recently used is the last to go
                entries.remove(best);
                entries.add(e);
                return new Hit(copy, bestShared, true);
            }
            entries.remove(best);
            if (e.sequence().rewind(bestShared)) {
                return new Hit(e.sequence(), bestShared, false);
            }
            e.sequence().close();
        }
    }

    /** The fewest shared tokens a kept sequence is forked for (a copy costs more than feeding a few tokens). */
    static final int FORK_LEAST = 32;

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

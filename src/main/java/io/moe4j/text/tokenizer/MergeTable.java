package io.moe4j.text.tokenizer;

/**
 * The BPE merges as an open-addressing hash table from a pair of token ids to (rank, merged id), in two primitive
 * arrays: half a million merges would otherwise cost that many boxed keys and entries, and lookups sit in the
 * innermost loop of encoding.
 */
final class MergeTable {
    private static final long EMPTY = -1L;

    private final long[] keys;
    /** rank in the high 32 bits, merged id in the low 32 bits. */
    private final long[] values;
    private final int mask;
    private int size;

    MergeTable(int expected) {
        int capacity = Integer.highestOneBit(Math.max(4, expected * 2 - 1)) << 1;
        keys = new long[capacity];
        values = new long[capacity];
        java.util.Arrays.fill(keys, EMPTY);
        mask = capacity - 1;
    }

    private static long key(int left, int right) {
        return ((long) left << 32) | (right & 0xFFFFFFFFL);
    }

    private int slot(long key) {
        long h = key * 0x9E3779B97F4A7C15L;
        return (int) (h >>> 40) & mask;
    }

    /** Adds or replaces a merge; a pair listed twice keeps its last rank, as the reference's map does. */
    void put(int left, int right, int rank, int merged) {
        long key = key(left, right);
        int i = slot(key);
        while (keys[i] != EMPTY && keys[i] != key) {
            i = (i + 1) & mask;
        }
        if (keys[i] == EMPTY) {
            if (++size > keys.length * 3 / 4) {
                throw new IllegalStateException("merge table over capacity");
            }
            keys[i] = key;
        }
        values[i] = ((long) rank << 32) | (merged & 0xFFFFFFFFL);
    }

    /** rank << 32 | merged id, or -1 when the pair does not merge. */
    long get(int left, int right) {
        long key = key(left, right);
        int i = slot(key);
        while (true) {
            long k = keys[i];
            if (k == key) {
                return values[i];
            }
            if (k == EMPTY) {
                return -1L;
            }
            i = (i + 1) & mask;
        }
    }

    int size() {
        return size;
    }
}

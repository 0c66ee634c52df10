package io.moe4j.text.tokenizer;

import java.util.Arrays;

/** A growable list of ints, for the ids of one encoding. */
final class IntList {
    private int[] items = new int[16];
    private int size;

    void add(int value) {
        if (size == items.length) {
            items = Arrays.copyOf(items, size * 2);
        }
        items[size++] = value;
    }

    void addAll(int[] values) {
        if (size + values.length > items.length) {
            items = Arrays.copyOf(items, Math.max(size * 2, size + values.length));
        }
        System.arraycopy(values, 0, items, size, values.length);
        size += values.length;
    }

    int[] toArray() {
        return Arrays.copyOf(items, size);
    }
}

package io.moe4j.text.tokenizer;

import java.util.Arrays;

/** A binary min-heap of longs, for the merge queue of one word (no boxing in the merge loop). */
final class LongHeap {
    private long[] items;
    private int size;

    LongHeap(int capacity) {
        items = new long[Math.max(4, capacity)];
    }

    boolean isEmpty() {
        return size == 0;
    }

    void push(long value) {
        if (size == items.length) {
            items = Arrays.copyOf(items, size * 2);
        }
        int i = size++;
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            if (items[parent] <= value) {
                break;
            }
            items[i] = items[parent];
            i = parent;
        }
        items[i] = value;
    }

    long pop() {
        long top = items[0];
        long last = items[--size];
        int i = 0;
        int half = size >>> 1;
        while (i < half) {
            int child = 2 * i + 1;
            if (child + 1 < size && items[child + 1] < items[child]) {
                child++;
            }
            if (items[child] >= last) {
                break;
            }
            items[i] = items[child];
            i = child;
        }
        items[i] = last;
        return top;
    }
}

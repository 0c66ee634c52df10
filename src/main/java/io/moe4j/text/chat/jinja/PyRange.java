package io.moe4j.text.chat.jinja;

import java.util.AbstractList;

/** What {@code range(...)} gives: iterates as its numbers, prints as Python's {@code range(start, stop[, step])}. */
final class PyRange extends AbstractList<Object> {
    private final long start;
    private final long stop;
    private final long step;
    private final int size;

    PyRange(long start, long stop, long step, int size) {
        this.start = start;
        this.stop = stop;
        this.step = step;
        this.size = size;
    }

    @Override
    public Object get(int index) {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException(index);
        }
        return start + step * index;
    }

    @Override
    public int size() {
        return size;
    }

    @Override
    public String toString() {
        return "range(" + start + ", " + stop + (step == 1 ? "" : ", " + step) + ")";
    }
}

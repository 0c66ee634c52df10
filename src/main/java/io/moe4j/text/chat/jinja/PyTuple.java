package io.moe4j.text.chat.jinja;

import java.util.AbstractList;
import java.util.List;

/** An immutable list that prints as a Python tuple, e.g. the pairs {@code dict.items()} yields. */
final class PyTuple extends AbstractList<Object> {
    private final List<Object> items;

    PyTuple(List<Object> items) {
        this.items = java.util.Collections.unmodifiableList(new java.util.ArrayList<>(items));
    }

    static PyTuple of(Object a, Object b) {
        java.util.ArrayList<Object> l = new java.util.ArrayList<>(2);
        l.add(a);
        l.add(b);
        return new PyTuple(l);
    }

    @Override
    public Object get(int index) {
        return items.get(index);
    }

    @Override
    public int size() {
        return items.size();
    }
}

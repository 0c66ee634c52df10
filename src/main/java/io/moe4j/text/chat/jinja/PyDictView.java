package io.moe4j.text.chat.jinja;

import java.util.AbstractList;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/** What {@code dict.items()}, {@code keys()} and {@code values()} give: iterate as a list, print as Python's views. */
final class PyDictView extends AbstractList<Object> {
    private final String kind;
    private final List<Object> items;

    PyDictView(String kind, List<Object> items) {
        this.kind = kind;
        this.items = Collections.unmodifiableList(new ArrayList<>(items));
    }

    String kind() {
        return kind;
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

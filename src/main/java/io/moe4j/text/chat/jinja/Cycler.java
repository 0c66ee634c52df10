package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;

/** What {@code cycler(a, b, ...)} makes: {@code next()} walks the items round, {@code current}, {@code reset()}. */
final class Cycler {
    private final List<Object> items;
    private int position;

    Cycler(List<Object> items) {
        this.items = new ArrayList<>(items);
    }

    Object attribute(String name) {
        return switch (name) {
            case "current" -> items.get(position);
            case "next" -> (JinjaCallable) (args, kwargs) -> {
                Object v = items.get(position);
                position = (position + 1) % items.size();
                return v;
            };
            case "reset" -> (JinjaCallable) (args, kwargs) -> {
                position = 0;
                return null;
            };
            case "items" -> new ArrayList<>(items);
            default -> Undefined.attribute(this, name);
        };
    }

    @Override
    public String toString() {
        return "<Cycler>";
    }
}

package io.moe4j.text.chat.jinja;

import java.util.List;

/** The {@code loop} variable inside a for loop: index, first/last, length, neighbours, {@code cycle()}. */
final class LoopState {
    private final List<Object> items;
    private final int depth0;
    private int index0;
    /** The arguments of the last {@code loop.changed(...)} call; null before the first. */
    private List<Object> lastChanged;

    LoopState(List<Object> items, int depth0) {
        this.items = items;
        this.depth0 = depth0;
    }

    void moveTo(int index0) {
        this.index0 = index0;
    }

    Object attribute(String name) {
        int n = items.size();
        return switch (name) {
            case "index" -> (long) index0 + 1;
            case "index0" -> (long) index0;
            case "revindex" -> (long) (n - index0);
            case "revindex0" -> (long) (n - index0 - 1);
            case "first" -> index0 == 0;
            case "last" -> index0 == n - 1;
            case "length" -> (long) n;
            case "depth" -> (long) depth0 + 1;
            case "depth0" -> (long) depth0;
            case "previtem" -> index0 > 0 ? items.get(index0 - 1)
                    : new Undefined("there is no previous item");
            case "nextitem" -> index0 + 1 < n ? items.get(index0 + 1) : new Undefined("there is no next item");
            case "cycle" -> (JinjaCallable) (args, kwargs) -> {
                if (args.isEmpty()) {
                    throw new JinjaRuntimeException("no items for cycling given");
                }
                return args.get(index0 % args.size());
            };
            case "changed" -> (JinjaCallable) (args, kwargs) -> {
                boolean changed = lastChanged == null || !Py.equal(new java.util.ArrayList<>(args), lastChanged);
                lastChanged = new java.util.ArrayList<>(args);
                return changed;
            };
            default -> Undefined.attribute(this, name);
        };
    }

    @Override
    public String toString() {
        return "<LoopContext " + (index0 + 1) + "/" + items.size() + ">";
    }
}

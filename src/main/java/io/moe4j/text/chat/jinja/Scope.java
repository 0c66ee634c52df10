package io.moe4j.text.chat.jinja;

import java.util.HashMap;
import java.util.Map;

/** One level of variables: the template, a loop iteration, a macro call or a with block. */
final class Scope {
    private final Scope parent;
    private final Map<String, Object> vars = new HashMap<>();

    Scope(Scope parent) {
        this.parent = parent;
    }

    boolean has(String name) {
        for (Scope s = this; s != null; s = s.parent) {
            if (s.vars.containsKey(name)) {
                return true;
            }
        }
        return false;
    }

    Object get(String name) {
        for (Scope s = this; s != null; s = s.parent) {
            if (s.vars.containsKey(name)) {
                return s.vars.get(name);
            }
        }
        return null;
    }

    void set(String name, Object value) {
        vars.put(name, value);
    }
}

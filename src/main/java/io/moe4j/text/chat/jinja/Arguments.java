package io.moe4j.text.chat.jinja;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Binds the positional and keyword arguments of a call to a built-in's parameters, Python style. */
final class Arguments {
    final String function;
    final List<Object> positional;
    final Map<String, Object> keywords;
    private final Set<String> usedKeywords = new HashSet<>();
    private int usedPositional;

    Arguments(String function, List<Object> positional, Map<String, Object> keywords) {
        this.function = function;
        this.positional = positional;
        this.keywords = keywords;
    }

    Object required(int index, String name) {
        if (index >= 0 && index < positional.size()) {
            usedPositional = Math.max(usedPositional, index + 1);
            return positional.get(index);
        }
        if (keywords.containsKey(name)) {
            usedKeywords.add(name);
            return keywords.get(name);
        }
        throw new JinjaRuntimeException(function + "() missing required argument '" + name + "'");
    }

    Object optional(int index, String name, Object fallback) {
        if (index >= 0 && index < positional.size()) {
            usedPositional = Math.max(usedPositional, index + 1);
            return positional.get(index);
        }
        if (keywords.containsKey(name)) {
            usedKeywords.add(name);
            return keywords.get(name);
        }
        return fallback;
    }

    /** Fails on arguments no parameter took. */
    void done() {
        if (positional.size() > usedPositional) {
            throw new JinjaRuntimeException(function + "() takes " + usedPositional + " positional argument(s) but "
                    + positional.size() + " were given");
        }
        for (String k : keywords.keySet()) {
            if (!usedKeywords.contains(k)) {
                throw new JinjaRuntimeException(function + "() got an unexpected keyword argument '" + k + "'");
            }
        }
    }

    String string(Object v) {
        if (v instanceof String s) {
            return s;
        }
        if (v instanceof Undefined u) {
            throw u.fail();
        }
        throw new JinjaRuntimeException(function + "() argument must be str, not " + Py.typeName(v));
    }
}

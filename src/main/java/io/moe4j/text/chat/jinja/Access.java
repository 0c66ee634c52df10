package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Attribute and item access as Jinja's sandbox does it. {@code obj.name} looks for a Python attribute first
 * (a method such as {@code dict.items} or {@code str.startswith}), then an item; {@code obj[key]} looks for an
 * item first, then an attribute. A miss gives {@link Undefined}; access on Undefined itself fails.
 */
final class Access {
    private static final Set<String> DICT_METHODS = Set.of(
            "items", "keys", "values", "get", "pop", "popitem", "setdefault", "update", "clear", "copy", "fromkeys");
    private static final Set<String> LIST_METHODS = Set.of(
            "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "index", "count", "copy");
    private static final Set<String> STRING_METHODS = Methods.STRING_METHODS;

    private Access() {
    }

    static Object attribute(Object target, String name) {
        switch (target) {
            case null -> {
                return Undefined.attribute(null, name);
            }
            case Undefined u -> throw u.fail();
            case Namespace ns -> {
                return ns.attributes.containsKey(name) ? ns.attributes.get(name) : Undefined.attribute(ns, name);
            }
            case LoopState loop -> {
                return loop.attribute(name);
            }
            case Cycler c -> {
                return c.attribute(name);
            }
            case Map<?, ?> m -> {
                if (DICT_METHODS.contains(name)) {
                    return Methods.bind(m, name);
                }
                return m.containsKey(name) ? m.get(name) : Undefined.attribute(m, name);
            }
            case String s -> {
                return STRING_METHODS.contains(name) ? Methods.bind(s, name) : Undefined.attribute(s, name);
            }
            case List<?> l -> {
                return LIST_METHODS.contains(name) ? Methods.bind(l, name) : Undefined.attribute(l, name);
            }
            default -> {
                return Undefined.attribute(target, name);
            }
        }
    }

    static Object item(Object target, Object key) {
        switch (target) {
            case null -> {
                return Undefined.attribute(null, key);
            }
            case Undefined u -> throw u.fail();
            case Map<?, ?> m -> {
                if (key instanceof String && m.containsKey(key)) {
                    return m.get(key);
                }
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (Py.equal(e.getKey(), key)) {
                        return e.getValue();
                    }
                }
            }
            case List<?> l -> {
                if (Py.isInteger(key)) {
                    long i = Py.toLong(key);
                    if (i < 0) {
                        i += l.size();
                    }
                    return i >= 0 && i < l.size() ? l.get((int) i) : Undefined.attribute(l, key);
                }
            }
            case String s -> {
                if (Py.isInteger(key)) {
                    List<Object> cps = Py.codePoints(s);
                    long i = Py.toLong(key);
                    if (i < 0) {
                        i += cps.size();
                    }
                    return i >= 0 && i < cps.size() ? cps.get((int) i) : Undefined.attribute(s, key);
                }
            }
            default -> { }
        }
        if (key instanceof String name) {
            return attribute(target, name);
        }
        return Undefined.attribute(target, key);
    }

    /** Python slicing {@code target[start:stop:step]} of lists and strings; null parts take Python's defaults. */
    static Object slice(Object target, Object start, Object stop, Object step) {
        if (target instanceof Undefined u) {
            throw u.fail();
        }
        List<?> items;
        if (target instanceof String s) {
            items = Py.codePoints(s);
        } else if (target instanceof List<?> l) {
            items = l;
        } else {
            throw new JinjaRuntimeException("'" + Py.typeName(target) + "' object is not subscriptable");
        }
        int n = items.size();
        long st = step == null ? 1 : index(step);
        if (st == 0) {
            throw new JinjaRuntimeException("slice step cannot be zero");
        }
        long lo;
        long hi;
        if (st > 0) {
            lo = start == null ? 0 : clamp(index(start), n, 0, n);
            hi = stop == null ? n : clamp(index(stop), n, 0, n);
        } else {
            lo = start == null ? n - 1 : clamp(index(start), n, -1, n - 1);
            hi = stop == null ? -1 : clamp(index(stop), n, -1, n - 1);
        }
        List<Object> out = new ArrayList<>();
        for (long i = lo; st > 0 ? i < hi : i > hi; i += st) {
            out.add(items.get((int) i));
        }
        if (target instanceof String) {
            StringBuilder sb = new StringBuilder();
            out.forEach(o -> sb.append((String) o));
            return sb.toString();
        }
        return target instanceof PyTuple ? new PyTuple(out) : out;
    }

    private static long index(Object v) {
        if (v == null) {
            return 0;
        }
        if (!Py.isInteger(v)) {
            throw new JinjaRuntimeException("slice indices must be integers or None, not " + Py.typeName(v));
        }
        return Py.toLong(v);
    }

    private static long clamp(long i, int n, long low, long high) {
        if (i < 0) {
            i += n;
        }
        return Math.max(low, Math.min(high, i));
    }
}

package io.moe4j.text.chat.jinja;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The Python methods of str, dict and list that chat templates call. Methods that would mutate a value fail,
 * as transformers renders in Jinja's immutable sandbox.
 */
final class Methods {
    static final Set<String> STRING_METHODS = Set.of(
            "startswith", "endswith", "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "replace",
            "upper", "lower", "title", "capitalize", "swapcase", "find", "rfind", "index", "rindex", "count",
            "join", "format", "isdigit", "isalpha", "isalnum", "isspace", "islower", "isupper", "isnumeric",
            "isdecimal", "removeprefix", "removesuffix", "partition", "rpartition", "zfill", "center", "ljust",
            "rjust", "casefold");
    private static final Set<String> MUTATORS = Set.of(
            "append", "extend", "insert", "pop", "remove", "clear", "sort", "reverse", "popitem", "setdefault",
            "update");

    private Methods() {
    }

    static JinjaCallable bind(Object self, String name) {
        return (args, kwargs) -> call(self, name, args, kwargs);
    }

    private static Object call(Object self, String name, List<Object> args, Map<String, Object> kwargs) {
        if (MUTATORS.contains(name)) {
            throw new JinjaRuntimeException("the template calls " + Py.typeName(self) + "." + name
                    + "(), which changes a value; chat templates render in an immutable sandbox");
        }
        return switch (self) {
            case String s -> string(s, name, new Arguments(name, args, kwargs));
            case Map<?, ?> m -> dict(m, name, new Arguments(name, args, kwargs));
            case List<?> l -> list(l, name, new Arguments(name, args, kwargs));
            default -> throw new JinjaRuntimeException("no method " + name + " on " + Py.typeName(self));
        };
    }

    private static Object dict(Map<?, ?> m, String name, Arguments a) {
        return switch (name) {
            case "items" -> {
                a.done();
                List<Object> out = new ArrayList<>();
                m.forEach((k, v) -> out.add(PyTuple.of(k, v)));
                yield new PyDictView("dict_items", out);
            }
            case "keys" -> {
                a.done();
                yield new PyDictView("dict_keys", new ArrayList<Object>(m.keySet()));
            }
            case "values" -> {
                a.done();
                yield new PyDictView("dict_values", new ArrayList<Object>(m.values()));
            }
            case "get" -> {
                Object key = a.required(0, "key");
                Object fallback = a.optional(1, "default", null);
                a.done();
                Object v = Access.item(m, key);
                yield containsKey(m, key) ? v : fallback;
            }
            case "copy" -> {
                a.done();
                yield new java.util.LinkedHashMap<Object, Object>(m);
            }
            default -> throw new JinjaRuntimeException("dict." + name + "() is not supported");
        };
    }

    private static boolean containsKey(Map<?, ?> m, Object key) {
        for (Object k : m.keySet()) {
            if (Py.equal(k, key)) {
                return true;
            }
        }
        return false;
    }

    private static Object list(List<?> l, String name, Arguments a) {
        return switch (name) {
            case "index" -> {
                Object x = a.required(0, "value");
                a.done();
                for (int i = 0; i < l.size(); i++) {
                    if (Py.equal(l.get(i), x)) {
                        yield (long) i;
                    }
                }
                throw new JinjaRuntimeException(Py.repr(x) + " is not in list");
            }
            case "count" -> {
                Object x = a.required(0, "value");
                a.done();
                yield l.stream().filter(o -> Py.equal(o, x)).count();
            }
            case "copy" -> {
                a.done();
                yield new ArrayList<Object>(l);
            }
            default -> throw new JinjaRuntimeException("list." + name + "() is not supported");
        };
    }

    private static Object string(String s, String name, Arguments a) {
        switch (name) {
            case "startswith", "endswith" -> {
                Object prefix = a.required(0, "prefix");
                a.done();
                List<?> options = prefix instanceof PyTuple t ? t : List.of(a.string(prefix));
                for (Object o : options) {
                    String p = a.string(o);
                    if (name.equals("startswith") ? s.startsWith(p) : s.endsWith(p)) {
                        return true;
                    }
                }
                return false;
            }
            case "split", "rsplit" -> {
                Object sep = a.optional(0, "sep", null);
                long max = Py.toLong(a.optional(1, "maxsplit", -1L));
                a.done();
                return name.equals("split") ? split(s, sep == null ? null : a.string(sep), max)
                        : rsplit(s, sep == null ? null : a.string(sep), max);
            }
            case "splitlines" -> {
                boolean keep = Py.truthy(a.optional(0, "keepends", false));
                a.done();
                return splitlines(s, keep);
            }
            case "strip", "lstrip", "rstrip" -> {
                Object chars = a.optional(0, "chars", null);
                a.done();
                String c = chars == null ? null : a.string(chars);
                return switch (name) {
                    case "strip" -> Py.strip(s, c);
                    case "lstrip" -> Py.lstrip(s, c);
                    default -> Py.rstrip(s, c);
                };
            }
            case "replace" -> {
                String old = a.string(a.required(0, "old"));
                String rep = a.string(a.required(1, "new"));
                long count = Py.toLong(a.optional(2, "count", -1L));
                a.done();
                return replace(s, old, rep, count);
            }
            case "upper" -> {
                a.done();
                return s.toUpperCase(Locale.ROOT);
            }
            case "lower", "casefold" -> {
                a.done();
                return s.toLowerCase(Locale.ROOT);
            }
            case "title" -> {
                a.done();
                return title(s);
            }
            case "capitalize" -> {
                a.done();
                return capitalize(s);
            }
            case "swapcase" -> {
                a.done();
                StringBuilder sb = new StringBuilder();
                s.codePoints().forEach(cp -> sb.appendCodePoint(Character.isUpperCase(cp) ? Character.toLowerCase(cp)
                        : Character.toUpperCase(cp)));
                return sb.toString();
            }
            case "find", "rfind", "index", "rindex" -> {
                String sub = a.string(a.required(0, "sub"));
                a.done();
                int i = name.startsWith("r") ? s.lastIndexOf(sub) : s.indexOf(sub);
                if (i < 0 && name.endsWith("index")) {
                    throw new JinjaRuntimeException("substring not found");
                }
                return i < 0 ? -1L : (long) s.codePointCount(0, i);
            }
            case "count" -> {
                String sub = a.string(a.required(0, "sub"));
                a.done();
                if (sub.isEmpty()) {
                    return (long) s.codePointCount(0, s.length()) + 1;
                }
                long n = 0;
                for (int i = s.indexOf(sub); i >= 0; i = s.indexOf(sub, i + sub.length())) {
                    n++;
                }
                return n;
            }
            case "join" -> {
                Object items = a.required(0, "iterable");
                a.done();
                StringBuilder sb = new StringBuilder();
                List<Object> parts = Py.iterate(items);
                for (int i = 0; i < parts.size(); i++) {
                    if (i > 0) {
                        sb.append(s);
                    }
                    if (!(parts.get(i) instanceof String p)) {
                        throw new JinjaRuntimeException("sequence item " + i + ": expected str instance, "
                                + Py.typeName(parts.get(i)) + " found");
                    }
                    sb.append(p);
                }
                return sb.toString();
            }
            case "format" -> {
                return BraceFormat.format(s, a.positional, a.keywords);
            }
            case "isdigit", "isdecimal", "isnumeric" -> {
                a.done();
                return !s.isEmpty() && s.codePoints().allMatch(Character::isDigit);
            }
            case "isalpha" -> {
                a.done();
                return !s.isEmpty() && s.codePoints().allMatch(Character::isLetter);
            }
            case "isalnum" -> {
                a.done();
                return !s.isEmpty() && s.codePoints().allMatch(Character::isLetterOrDigit);
            }
            case "isspace" -> {
                a.done();
                return !s.isEmpty() && Py.isAllSpace(s);
            }
            case "islower", "isupper" -> {
                a.done();
                boolean cased = s.codePoints().anyMatch(cp -> Character.isUpperCase(cp) || Character.isLowerCase(cp));
                boolean lower = name.equals("islower");
                return cased && s.codePoints().noneMatch(cp -> lower ? Character.isUpperCase(cp) : Character.isLowerCase(cp));
            }
            case "removeprefix" -> {
                String p = a.string(a.required(0, "prefix"));
                a.done();
                return s.startsWith(p) ? s.substring(p.length()) : s;
            }
            case "removesuffix" -> {
                String p = a.string(a.required(0, "suffix"));
                a.done();
                return s.endsWith(p) && !p.isEmpty() ? s.substring(0, s.length() - p.length()) : s;
            }
            case "partition", "rpartition" -> {
                String sep = a.string(a.required(0, "sep"));
                a.done();
                if (sep.isEmpty()) {
                    throw new JinjaRuntimeException("empty separator");
                }
                int i = name.equals("partition") ? s.indexOf(sep) : s.lastIndexOf(sep);
                if (i < 0) {
                    return name.equals("partition") ? new PyTuple(List.of(s, "", "")) : new PyTuple(List.of("", "", s));
                }
                return new PyTuple(List.of(s.substring(0, i), sep, s.substring(i + sep.length())));
            }
            case "zfill" -> {
                long width = Py.toLong(a.required(0, "width"));
                a.done();
                int len = s.codePointCount(0, s.length());
                if (width <= len) {
                    return s;
                }
                String pad = "0".repeat((int) (width - len));
                return !s.isEmpty() && (s.charAt(0) == '-' || s.charAt(0) == '+') ? s.charAt(0) + pad + s.substring(1)
                        : pad + s;
            }
            case "center", "ljust", "rjust" -> {
                long width = Py.toLong(a.required(0, "width"));
                String fill = a.string(a.optional(1, "fillchar", " "));
                a.done();
                int len = s.codePointCount(0, s.length());
                if (width <= len) {
                    return s;
                }
                int total = (int) (width - len);
                int left = switch (name) {
                    case "ljust" -> 0;
                    case "rjust" -> total;
                    default -> total / 2 + (total & (int) width & 1);
                };
                return fill.repeat(left) + s + fill.repeat(total - left);
            }
            default -> throw new JinjaRuntimeException("str." + name + "() is not supported");
        }
    }

    static List<Object> split(String s, String sep, long max) {
        List<Object> out = new ArrayList<>();
        if (sep == null) {
            int i = 0;
            int n = s.length();
            while (true) {
                while (i < n && Py.isSpace(s.charAt(i))) {
                    i++;
                }
                if (i >= n) {
                    break;
                }
                if (max >= 0 && out.size() >= max) {
                    out.add(Py.rstrip(s.substring(i), null));
                    break;
                }
                int j = i;
                while (j < n && !Py.isSpace(s.charAt(j))) {
                    j++;
                }
                out.add(s.substring(i, j));
                i = j;
            }
            return out;
        }
        if (sep.isEmpty()) {
            throw new JinjaRuntimeException("empty separator");
        }
        int from = 0;
        while (max < 0 || out.size() < max) {
            int i = s.indexOf(sep, from);
            if (i < 0) {
                break;
            }
            out.add(s.substring(from, i));
            from = i + sep.length();
        }
        out.add(s.substring(from));
        return out;
    }

    private static List<Object> rsplit(String s, String sep, long max) {
        if (max < 0) {
            return split(s, sep, max);
        }
        List<Object> out = new ArrayList<>();
        if (sep == null) {
            int j = s.length();
            while (true) {
                while (j > 0 && Py.isSpace(s.charAt(j - 1))) {
                    j--;
                }
                if (j <= 0) {
                    break;
                }
                if (out.size() >= max) {
                    out.add(0, Py.lstrip(s.substring(0, j), null));
                    break;
                }
                int i = j;
                while (i > 0 && !Py.isSpace(s.charAt(i - 1))) {
                    i--;
                }
                out.add(0, s.substring(i, j));
                j = i;
            }
            return out;
        }
        if (sep.isEmpty()) {
            throw new JinjaRuntimeException("empty separator");
        }
        int end = s.length();
        while (out.size() < max) {
            int i = s.lastIndexOf(sep, end - sep.length());
            if (i < 0) {
                break;
            }
            out.add(0, s.substring(i + sep.length(), end));
            end = i;
        }
        out.add(0, s.substring(0, end));
        return out;
    }

    private static List<Object> splitlines(String s, boolean keep) {
        List<Object> out = new ArrayList<>();
        int start = 0;
        int i = 0;
        while (i < s.length()) {
            char c = s.charAt(i);
            boolean lineBreak = c == '\n' || c == '\r' || c == '\u000b' || c == '\f' || c == '\u001c' || c == '\u001d'
                    || c == '\u001e' || c == '\u0085' || c == '\u2028' || c == '\u2029';
            if (!lineBreak) {
                i++;
                continue;
            }
            int end = i + (c == '\r' && i + 1 < s.length() && s.charAt(i + 1) == '\n' ? 2 : 1);
            out.add(s.substring(start, keep ? end : i));
            start = end;
            i = end;
        }
        if (start < s.length()) {
            out.add(s.substring(start));
        }
        return out;
    }

    static String replace(String s, String old, String rep, long count) {
        if (count < 0) {
            if (old.isEmpty()) {
                StringBuilder sb = new StringBuilder(rep);
                s.codePoints().forEach(cp -> sb.appendCodePoint(cp).append(rep));
                return sb.toString();
            }
            return s.replace(old, rep);
        }
        StringBuilder sb = new StringBuilder();
        int from = 0;
        for (long n = 0; n < count; n++) {
            int i = s.indexOf(old, from);
            if (i < 0 || old.isEmpty()) {
                break;
            }
            sb.append(s, from, i).append(rep);
            from = i + old.length();
        }
        return sb.append(s.substring(from)).toString();
    }

    static String title(String s) {
        StringBuilder sb = new StringBuilder();
        boolean previousCased = false;
        for (int i = 0; i < s.length(); ) {
            int cp = s.codePointAt(i);
            boolean cased = Character.isUpperCase(cp) || Character.isLowerCase(cp) || Character.isTitleCase(cp);
            sb.appendCodePoint(cased ? (previousCased ? Character.toLowerCase(cp) : Character.toTitleCase(cp)) : cp);
            previousCased = cased;
            i += Character.charCount(cp);
        }
        return sb.toString();
    }

    static String capitalize(String s) {
        if (s.isEmpty()) {
            return s;
        }
        int first = s.codePointAt(0);
        return new String(Character.toChars(Character.toTitleCase(first)))
                + s.substring(Character.charCount(first)).toLowerCase(Locale.ROOT);
    }
}

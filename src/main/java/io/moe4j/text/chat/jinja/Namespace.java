package io.moe4j.text.chat.jinja;

import java.util.LinkedHashMap;
import java.util.Map;

/** The object {@code namespace(...)} makes: the one value whose attributes a template may assign across scopes. */
final class Namespace {
    final Map<String, Object> attributes = new LinkedHashMap<>();

    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("<Namespace {");
        boolean first = true;
        for (Map.Entry<String, Object> e : attributes.entrySet()) {
            if (!first) {
                sb.append(", ");
            }
            first = false;
            sb.append(Py.repr(e.getKey())).append(": ").append(Py.repr(e.getValue()));
        }
        return sb.append("}>").toString();
    }
}

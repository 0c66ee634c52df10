package io.moe4j.text.chat.jinja;

import java.util.List;
import java.util.Map;

/** Anything a template can call: globals, macros, bound methods of strings, dicts and lists. */
@FunctionalInterface
interface JinjaCallable {
    Object call(List<Object> args, Map<String, Object> kwargs);
}

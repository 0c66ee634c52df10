package io.moe4j.text.chat.jinja;

/**
 * Jinja's default {@code Undefined}, as transformers leaves it: prints as the empty string, is falsy, iterates as
 * empty and has length 0; attribute access, calls and arithmetic on it fail with {@link #message()}.
 */
record Undefined(String message) {
    static Undefined named(String name) {
        return new Undefined("'" + name + "' is undefined");
    }

    static Undefined attribute(Object owner, Object attribute) {
        return new Undefined("'" + Py.typeName(owner) + " object' has no attribute " + Py.repr(attribute));
    }

    JinjaRuntimeException fail() {
        return new JinjaRuntimeException(message);
    }
}

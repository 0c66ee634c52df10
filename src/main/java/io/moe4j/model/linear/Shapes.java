package io.moe4j.model.linear;

/** The argument checks of {@link Linear#forward}. */
final class Shapes {
    private Shapes() {
    }

    static void check(String module, float[] x, int tokens, int in, float[] y, int out) {
        if (tokens < 0 || x.length < (long) tokens * in || y.length < (long) tokens * out) {
            throw new IllegalArgumentException(module + ": x must hold " + tokens + " × " + in + " values and y "
                    + tokens + " × " + out + " (x has " + x.length + ", y " + y.length + ")");
        }
    }
}

package io.moe4j.model;

/**
 * Which earlier positions a query may attend to, beside causality: all of them, the last {@code size} (a sliding
 * window, the query included), or those of its own chunk of {@code size} positions (Llama-4's chunked attention).
 */
public record AttentionWindow(Kind kind, int size) {
    public enum Kind { FULL, SLIDING, CHUNKED }

    public static final AttentionWindow FULL = new AttentionWindow(Kind.FULL, 0);

    public AttentionWindow {
        if (kind != Kind.FULL && size <= 0) {
            throw new IllegalArgumentException(kind + " attention needs a positive size, got " + size);
        }
    }

    public static AttentionWindow sliding(int size) {
        return new AttentionWindow(Kind.SLIDING, size);
    }

    public static AttentionWindow chunked(int size) {
        return new AttentionWindow(Kind.CHUNKED, size);
    }

    /** The first key position a query at {@code query} sees. */
    public long firstVisible(long query) {
        return switch (kind) {
            case FULL -> 0;
            case SLIDING -> Math.max(0, query - size + 1);
            case CHUNKED -> query / size * size;
        };
    }

    /** The first key position that any query at {@code next} or later can still see: the cache drops the rest. */
    public long keepFrom(long next) {
        return firstVisible(next);
    }
}

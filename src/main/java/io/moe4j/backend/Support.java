package io.moe4j.backend;

/** A backend's answer to "can you run this layer here?", always with the reason. */
public sealed interface Support {
    String reason();

    default boolean supported() {
        return this instanceof Supported;
    }

    record Supported(String reason) implements Support {
    }

    record Unsupported(String reason) implements Support {
    }

    static Support yes(String reason) {
        return new Supported(reason);
    }

    static Support no(String reason) {
        return new Unsupported(reason);
    }
}

package io.moe4j.safetensors;

import io.moe4j.MoeException;

import java.nio.file.Path;

/** A safetensors file that is malformed, or a tensor that is missing or not what the caller needs. */
public final class SafetensorsException extends MoeException {
    public SafetensorsException(Path file, String message) {
        super(file + ": " + message);
    }

    public SafetensorsException(Path file, String tensor, String message) {
        super(file + ": tensor '" + tensor + "': " + message);
    }
}

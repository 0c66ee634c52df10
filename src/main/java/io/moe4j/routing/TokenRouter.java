package io.moe4j.routing;

/**
 * Something that routes a batch of tokens: the host {@link Router} itself, or a backend's copy of it on its device
 * (same rules, same tie-breaking, logits in float64 either way). A layer asks its backend for one
 * ({@code Backend.prepareRouter}) so that the routing runs where the experts run.
 */
public interface TokenRouter extends AutoCloseable {

    /** Routes {@code tokens} rows of {@code x} ([T, H], row-major); each token's choices sorted by expert id. */
    Routing route(float[] x, int tokens);

    /** Where the routing runs, for logs: {@code "host"} or the device. */
    String where();

    /** Frees what the router holds on a device; the host router holds nothing. */
    @Override
    default void close() {
    }
}

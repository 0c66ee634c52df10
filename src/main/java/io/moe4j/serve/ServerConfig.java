package io.moe4j.serve;

import java.time.Duration;

/**
 * Where and how the HTTP server listens.
 *
 * @param apiKey        the key clients must send as {@code Authorization: Bearer KEY}; null lets everyone in
 * @param maxBodyBytes  larger request bodies get 413
 * @param shutdownGrace how long a shutdown lets running requests finish before it cancels them
 * @param keepAlive     a stream that has had no event for this long gets an SSE comment line, so a client that hung
 *                      up while its request waits (queued, or in a long prefill) is noticed and its request dropped
 */
public record ServerConfig(String host, int port, String apiKey, int maxBodyBytes, Duration shutdownGrace,
                           Duration keepAlive) {
    public ServerConfig {
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be in [0, 65535], got " + port);
        }
        if (maxBodyBytes < 1024) {
            throw new IllegalArgumentException("max body bytes must be >= 1024, got " + maxBodyBytes);
        }
        if (keepAlive.toMillis() < 1) {
            throw new IllegalArgumentException("keep-alive must be at least 1 ms, got " + keepAlive);
        }
        if (apiKey != null && apiKey.isEmpty()) {
            apiKey = null;
        }
    }

    /**
     * Loopback, the given port (0 picks a free one), no key, 4 MiB bodies, 30 s to finish on shutdown, a keep-alive
     * comment after 5 s without events.
     */
    public static ServerConfig local(int port) {
        return new ServerConfig("127.0.0.1", port, null, 4 << 20, Duration.ofSeconds(30), Duration.ofSeconds(5));
    }

    public ServerConfig withApiKey(String key) {
        return new ServerConfig(host, port, key, maxBodyBytes, shutdownGrace, keepAlive);
    }

    public ServerConfig withKeepAlive(Duration every) {
        return new ServerConfig(host, port, apiKey, maxBodyBytes, shutdownGrace, every);
    }
}

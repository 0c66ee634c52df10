package io.moe4j.serve;

import org.eclipse.jetty.ee10.servlet.ServletContextRequest;
import org.eclipse.jetty.http.HttpVersion;
import org.eclipse.jetty.io.EndPoint;
import org.eclipse.jetty.util.BufferUtil;

import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Notices that the client of a plain (not streamed) HTTP/1.x request has closed its connection while the answer is
 * generated. Jetty reads a connection only between its requests, and a plain request writes nothing until the answer
 * is whole, so a client that gave up would otherwise keep its sequence generating to max_tokens. The probe reads the
 * connection itself, at most once every {@link #INTERVAL_NANOS} and at most one byte: an HTTP/1.1 client sends
 * nothing before it has its answer; should one pipeline its next request anyway, that byte is gone, so the connection
 * closes after the answer ({@link #tookData}) and no broken request follows. HTTP/2 streams share a connection and
 * are not probed.
 */
final class HangUpProbe {
    static final long INTERVAL_NANOS = 500_000_000L;

    private final EndPoint endPoint;
    private long nextAt;
    private boolean tookData;

    private HangUpProbe(EndPoint endPoint) {
        this.endPoint = endPoint;
        this.nextAt = System.nanoTime() + INTERVAL_NANOS;
    }

    /** The probe of {@code request}'s connection; one that never reports a hang-up where it cannot tell. */
    static HangUpProbe of(ServletContextRequest request) {
        if (request == null) {
            return new HangUpProbe(null);
        }
        HttpVersion version = request.getConnectionMetaData().getHttpVersion();
        boolean http1 = version == HttpVersion.HTTP_1_1 || version == HttpVersion.HTTP_1_0;
        return new HangUpProbe(http1 ? request.getConnectionMetaData().getConnection().getEndPoint() : null);
    }

    /** Whether the client has closed its side (read at most once an interval; false in between). */
    boolean clientGone() {
        long now = System.nanoTime();
        if (endPoint == null || tookData || now < nextAt) {
            return false;
        }
        nextAt = now + INTERVAL_NANOS;
        if (!endPoint.isOpen() || endPoint.isInputShutdown()) {
            return true;
        }
        ByteBuffer one = BufferUtil.allocate(1);
        try {
            int n = endPoint.fill(one);
            if (n > 0) {
                tookData = true;
            }
            return n < 0;
        } catch (IOException e) { // reset by the peer
            return true;
        }
    }

    /** Whether a probe read a byte of a next request: the connection must then close after this answer. */
    boolean tookData() {
        return tookData;
    }
}

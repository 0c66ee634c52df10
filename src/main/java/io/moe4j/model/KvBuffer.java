package io.moe4j.model;

import java.util.Arrays;

/**
 * The cached rows of one attention layer (keys and values, or MLA's compressed latent and rope key), one row of
 * {@code width} floats per position, for a contiguous run of positions [{@link #first()}, {@link #end()}). Rows that
 * no later query can attend to are dropped from the front, so sliding-window and chunked layers hold at most a
 * window or a chunk.
 */
public final class KvBuffer {
    private final int width;
    private float[] data;
    private int startRow;
    private int rows;
    private long first;
    /** Positions a rewind may go back and still find every row its next query sees ({@link #keepForRewind}). */
    private int rewindable;

    public KvBuffer(int width) {
        this.width = width;
        this.data = new float[width * 16];
    }

    public int width() {
        return width;
    }

    /** The position of the oldest row held. */
    public long first() {
        return first;
    }

    /** One past the position of the newest row. */
    public long end() {
        return first + rows;
    }

    public int rows() {
        return rows;
    }

    /** The offset in {@link #data()} of the row of {@code position}. */
    public int offset(long position) {
        if (position < first || position >= end()) {
            throw new IllegalStateException("position " + position + " is not cached (holding " + first + ".." + end() + ")");
        }
        return (startRow + (int) (position - first)) * width;
    }

    public float[] data() {
        return data;
    }

    /** Appends {@code n} rows from src (row-major, {@code width} each) at positions end() .. end()+n-1. */
    public void append(float[] src, int n) {
        ensureRoom(n);
        System.arraycopy(src, 0, data, (startRow + rows) * width, n * width);
        rows += n;
    }

    /**
     * Keeps, beyond the rows later queries see, those that a query up to {@code positions} back would see, so that
     * the sequence can rewind that far ({@link #dropInvisible}); 0 (the default) keeps only the window.
     */
    public void keepForRewind(int positions) {
        if (positions < 0) {
            throw new IllegalArgumentException("positions to keep for a rewind must be 0 or more, got " + positions);
        }
        rewindable = positions;
    }

    /**
     * Drops the rows that no query at {@code next} or later can see through {@code window}, keeping those a query
     * {@link #keepForRewind} positions earlier would.
     */
    public void dropInvisible(AttentionWindow window, long next) {
        dropBefore(window.keepFrom(Math.max(0, next - rewindable)));
    }

    /** Whether, after going back to {@code position}, the next query there finds every row it sees. */
    public boolean canRewind(AttentionWindow window, long position) {
        return first <= window.keepFrom(position);
    }

    /** Drops the rows before {@code position}. */
    public void dropBefore(long position) {
        int drop = (int) Math.max(0, Math.min(rows, position - first));
        startRow += drop;
        rows -= drop;
        first += drop;
    }

    /** Drops the rows at {@code position} and after; the rows before it stay. */
    public void truncate(long position) {
        rows = (int) Math.max(0, Math.min(rows, position - first));
    }

    /** Fails unless the cache ends right where new positions start (a session feeds positions in order). */
    public static void checkContinues(KvBuffer cache, long start) {
        if (cache.end() != start) {
            throw new IllegalStateException("the cache holds positions up to " + cache.end() + " but the next tokens start at "
                    + start + ": a cache serves one sequence, fed in order");
        }
    }

    /**
     * A new buffer holding this one's rows before {@code position} (and its rewind allowance); the two then change
     * apart.
     */
    public KvBuffer copyBefore(long position) {
        KvBuffer copy = new KvBuffer(width);
        int keep = (int) Math.max(0, Math.min(rows, position - first));
        copy.data = new float[Math.max(keep, 16) * width];
        System.arraycopy(data, startRow * width, copy.data, 0, keep * width);
        copy.rows = keep;
        copy.first = first;
        copy.rewindable = rewindable;
        return copy;
    }

    public void clear() {
        startRow = 0;
        rows = 0;
        first = 0;
    }

    private void ensureRoom(int n) {
        int capacityRows = data.length / width;
        if (startRow + rows + n <= capacityRows) {
            return;
        }
        if (rows + n <= capacityRows && startRow >= rows) {
            // slide the live rows to the front instead of growing
            System.arraycopy(data, startRow * width, data, 0, rows * width);
            startRow = 0;
            return;
        }
        int needed = rows + n;
        float[] grown = new float[Math.max(needed, capacityRows * 2) * width];
        System.arraycopy(data, startRow * width, grown, 0, rows * width);
        data = grown;
        startRow = 0;
    }
}

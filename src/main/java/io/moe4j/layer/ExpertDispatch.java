package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.routing.Routing;

import java.util.Arrays;

/**
 * One rank's dispatch plan for an MoE layer under expert parallelism with all-to-all exchange: which of its rows go
 * to which rank, packed for sending, and how the partial outputs that come back are summed into the rows. A row goes
 * to a rank once if that rank holds any of its top-k experts, however many; it travels with its whole routing (global
 * ids and weights), and the receiving layer's slice computes the experts it holds and adds zero for the rest.
 *
 * <p>The transport (NCCL grouped send/recv on GPUs) moves {@link #pack} and {@link #packRouting} of each destination
 * and brings back each destination's partial rows for {@link #combine}; this class does no communication.
 */
public final class ExpertDispatch {
    private final int hidden;
    private final Routing routing;
    private final int[][] rows;

    private ExpertDispatch(int hidden, Routing routing, int[][] rows) {
        this.hidden = hidden;
        this.routing = routing;
        this.rows = rows;
    }

    /** Plans the dispatch of the rows routed by {@code routing} (this rank's rows) over {@code placement}. */
    public static ExpertDispatch plan(Routing routing, int hidden, ExpertPlacement placement) {
        int ranks = placement.ranks();
        int[] counts = new int[ranks];
        boolean[] to = new boolean[ranks];
        int[][] marks = new int[routing.tokens()][];
        for (int t = 0; t < routing.tokens(); t++) {
            Arrays.fill(to, false);
            for (int j = 0; j < routing.topK(); j++) {
                int e = routing.expert(t, j);
                if (e < 0 || e >= placement.numExperts()) {
                    throw new MoeException("row " + t + " is routed to expert " + e + "; the placement has "
                            + placement.numExperts() + " experts");
                }
                to[placement.ownerOf(e)] = true;
            }
            int n = 0;
            for (boolean b : to) {
                n += b ? 1 : 0;
            }
            marks[t] = new int[n];
            n = 0;
            for (int r = 0; r < ranks; r++) {
                if (to[r]) {
                    marks[t][n++] = r;
                    counts[r]++;
                }
            }
        }
        int[][] rows = new int[ranks][];
        for (int r = 0; r < ranks; r++) {
            rows[r] = new int[counts[r]];
        }
        int[] fill = new int[ranks];
        for (int t = 0; t < routing.tokens(); t++) {
            for (int r : marks[t]) {
                rows[r][fill[r]++] = t;
            }
        }
        return new ExpertDispatch(hidden, routing, rows);
    }

    public int ranks() {
        return rows.length;
    }

    /** The number of this rank's rows sent to {@code rank}. */
    public int count(int rank) {
        return rows[rank].length;
    }

    /** This rank's row indices sent to {@code rank}, ascending. */
    public int[] rows(int rank) {
        return rows[rank].clone();
    }

    /** The rows for {@code rank} out of x [T, H], packed [count, H]. */
    public float[] pack(float[] x, int rank) {
        int[] r = rows[rank];
        float[] out = new float[r.length * hidden];
        for (int i = 0; i < r.length; i++) {
            System.arraycopy(x, r[i] * hidden, out, i * hidden, hidden);
        }
        return out;
    }

    /** The routing of the rows for {@code rank}, in packed order. */
    public Routing packRouting(int rank) {
        int[] r = rows[rank];
        int k = routing.topK();
        int[] ids = new int[r.length * k];
        float[] weights = new float[r.length * k];
        for (int i = 0; i < r.length; i++) {
            System.arraycopy(routing.ids(), r[i] * k, ids, i * k, k);
            System.arraycopy(routing.weights(), r[i] * k, weights, i * k, k);
        }
        return new Routing(r.length, k, ids, weights, routing.weightOnInput());
    }

    /** Adds the partial outputs [count, H] that {@code rank} computed for the rows sent to it into out [T, H]. */
    public void combine(int rank, float[] partial, float[] out) {
        int[] r = rows[rank];
        if (partial.length != r.length * hidden) {
            throw new MoeException("rank " + rank + " returned " + partial.length + " values for " + r.length
                    + " rows of " + hidden);
        }
        for (int i = 0; i < r.length; i++) {
            int base = r[i] * hidden;
            for (int c = 0; c < hidden; c++) {
                out[base + c] += partial[i * hidden + c];
            }
        }
    }

    /** Concatenates routings received from several ranks, in the given order, into one for the layer's slice. */
    public static Routing concat(Routing... parts) {
        if (parts.length == 0) {
            throw new IllegalArgumentException("no routings to concatenate");
        }
        int k = parts[0].topK();
        int tokens = 0;
        for (Routing p : parts) {
            if (p.topK() != k || p.weightOnInput() != parts[0].weightOnInput()) {
                throw new MoeException("routings of one layer differ in top-k or weight placement");
            }
            tokens += p.tokens();
        }
        int[] ids = new int[tokens * k];
        float[] weights = new float[tokens * k];
        int at = 0;
        for (Routing p : parts) {
            System.arraycopy(p.ids(), 0, ids, at, p.ids().length);
            System.arraycopy(p.weights(), 0, weights, at, p.weights().length);
            at += p.ids().length;
        }
        return new Routing(tokens, k, ids, weights, parts[0].weightOnInput());
    }
}

package io.moe4j.backend.cuda;

import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

/**
 * A batch's routing as the device pipeline reads it: the routed (token, choice) pairs sorted by local expert
 * (a counting sort, stable in token order), so that each expert's pairs are contiguous rows of the GEMM inputs and
 * outputs, and for each token where its choices landed. Pairs routed to experts held elsewhere are dropped.
 *
 * @param pairToken  token of each pair (pairs sorted by expert)
 * @param pairExpert local expert of each pair
 * @param pairWeight router weight of each pair
 * @param tokenPair  [tokens · topK]: the pair of each (token, choice), or -1 where the expert is not local
 * @param groupExpert local expert of each group of pairs, ascending
 * @param groupStart group g is pairs [groupStart[g], groupStart[g + 1])
 */
record RoutePlan(int tokens, int topK, int[] pairToken, int[] pairExpert, float[] pairWeight, int[] tokenPair,
        int[] groupExpert, int[] groupStart) {

    static RoutePlan of(Routing routing, ExpertWeights w) {
        int n = routing.tokens() * routing.topK();
        int local = w.numExperts();
        int[] localOf = new int[n];
        int[] count = new int[local + 1];
        for (int i = 0; i < n; i++) {
            int le = w.localExpert(routing.ids()[i]);
            localOf[i] = le;
            if (le >= 0) {
                count[le + 1]++;
            }
        }
        int groups = 0;
        for (int e = 0; e < local; e++) {
            if (count[e + 1] > 0) {
                groups++;
            }
            count[e + 1] += count[e];
        }
        int pairs = count[local];
        int[] pairToken = new int[pairs];
        int[] pairExpert = new int[pairs];
        float[] pairWeight = new float[pairs];
        int[] tokenPair = new int[n];
        int[] fill = count.clone();
        for (int i = 0; i < n; i++) {
            int le = localOf[i];
            if (le < 0) {
                tokenPair[i] = -1;
                continue;
            }
            int p = fill[le]++;
            pairToken[p] = i / routing.topK();
            pairExpert[p] = le;
            pairWeight[p] = routing.weights()[i];
            tokenPair[i] = p;
        }
        int[] groupExpert = new int[groups];
        int[] groupStart = new int[groups + 1];
        int g = 0;
        for (int e = 0; e < local; e++) {
            if (count[e + 1] > count[e]) {
                groupExpert[g] = e;
                groupStart[g] = count[e];
                g++;
            }
        }
        groupStart[groups] = pairs;
        return new RoutePlan(routing.tokens(), routing.topK(), pairToken, pairExpert, pairWeight, tokenPair,
                groupExpert, groupStart);
    }

    int pairs() {
        return pairToken.length;
    }

    int groups() {
        return groupExpert.length;
    }

    int largestGroup() {
        int m = 0;
        for (int g = 0; g < groups(); g++) {
            m = Math.max(m, groupStart[g + 1] - groupStart[g]);
        }
        return m;
    }

    /**
     * Each group cut into pieces of at most {@code size} pairs, as int4 (expert, first pair, count, 0): the
     * batches of the CUDA-core GEMM and the M tiles of the tile GEMM.
     */
    int[] pieces(int size) {
        int total = 0;
        for (int g = 0; g < groups(); g++) {
            total += Math.ceilDiv(groupStart[g + 1] - groupStart[g], size);
        }
        int[] out = new int[4 * total];
        int at = 0;
        for (int g = 0; g < groups(); g++) {
            for (int first = groupStart[g]; first < groupStart[g + 1]; first += size) {
                out[at++] = groupExpert[g];
                out[at++] = first;
                out[at++] = Math.min(size, groupStart[g + 1] - first);
                out[at++] = 0;
            }
        }
        return out;
    }

    /** The (expert, input row) int2 of every pair for the GEMV: the input row is the token or the pair itself. */
    int[] routes(boolean byToken) {
        int[] out = new int[2 * pairs()];
        for (int p = 0; p < pairs(); p++) {
            out[2 * p] = pairExpert[p];
            out[2 * p + 1] = byToken ? pairToken[p] : p;
        }
        return out;
    }

    /** 0, 1, ..., pairs - 1: the input rows of a GEMM whose inputs were written per pair. */
    int[] identityRows() {
        int[] out = new int[pairs()];
        for (int p = 0; p < out.length; p++) {
            out[p] = p;
        }
        return out;
    }
}

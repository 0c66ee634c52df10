package io.moe4j.backend.cuda;

import io.moe4j.backend.TokenGroups;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

/**
 * A batch's routing as the device pipeline reads it: the routed (token, choice) pairs grouped by local expert
 * ({@link TokenGroups}, stable in token order), so that each expert's pairs are contiguous rows of the GEMM inputs and
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
        TokenGroups g = TokenGroups.of(routing, w);
        int[] pairExpert = new int[g.pairs()];
        for (int group = 0; group < g.groups(); group++) {
            java.util.Arrays.fill(pairExpert, g.start()[group], g.start()[group + 1], g.experts()[group]);
        }
        return new RoutePlan(routing.tokens(), routing.topK(), g.token(), pairExpert, g.weight(), g.pairOf(),
                g.experts(), g.start());
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

package io.moe4j.backend;

import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

/**
 * The "prepare" stage: routed (token, choice) pairs grouped by local expert, so each expert's weights are
 * streamed once per batch however many tokens chose it. Pairs routed to experts held elsewhere are dropped.
 *
 * @param experts   local expert of each group, in ascending order
 * @param start     group g's pairs are {@code [start[g], start[g+1])} of {@code token}/{@code weight}
 * @param token     token index of each pair
 * @param weight    router weight of each pair
 * @param pairOf    [tokens · topK]: the pair each (token, choice) became, or −1 where its expert is not local
 */
public record TokenGroups(int[] experts, int[] start, int[] token, float[] weight, int[] pairOf) {

    public static TokenGroups of(Routing routing, ExpertWeights w) {
        int n = routing.tokens() * routing.topK();
        int local = w.numExperts();
        int[] count = new int[local + 1];
        int[] localOf = new int[n];
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
        int[] token = new int[count[local]];
        float[] weight = new float[count[local]];
        int[] pairOf = new int[n];
        int[] fill = count.clone();
        for (int i = 0; i < n; i++) {
            int le = localOf[i];
            if (le >= 0) {
                int at = fill[le]++;
                token[at] = i / routing.topK();
                weight[at] = routing.weights()[i];
                pairOf[i] = at;
            } else {
                pairOf[i] = -1;
            }
        }
        int[] experts = new int[groups];
        int[] start = new int[groups + 1];
        int g = 0;
        for (int e = 0; e < local; e++) {
            if (count[e + 1] > count[e]) {
                experts[g] = e;
                start[g] = count[e];
                g++;
            }
        }
        start[groups] = count[local];
        return new TokenGroups(experts, start, token, weight, pairOf);
    }

    public int groups() {
        return experts.length;
    }

    public int size(int group) {
        return start[group + 1] - start[group];
    }

    public int pairs() {
        return token.length;
    }
}

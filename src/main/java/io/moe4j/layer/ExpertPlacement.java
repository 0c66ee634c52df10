package io.moe4j.layer;

import io.moe4j.MoeException;

import java.util.Arrays;

/**
 * Which rank (GPU) holds each routed expert of a layer, for expert parallelism.
 *
 * @param owner global expert id → rank
 * @param ranks the number of ranks
 */
public record ExpertPlacement(int[] owner, int ranks) {

    public ExpertPlacement {
        if (ranks <= 0) {
            throw new IllegalArgumentException("expert placement over " + ranks + " ranks");
        }
        owner = owner.clone();
        boolean[] used = new boolean[ranks];
        for (int e = 0; e < owner.length; e++) {
            if (owner[e] < 0 || owner[e] >= ranks) {
                throw new MoeException("expert " + e + " is placed on rank " + owner[e] + "; ranks are 0.." + (ranks - 1));
            }
            used[owner[e]] = true;
        }
        for (int r = 0; r < ranks; r++) {
            if (!used[r]) {
                throw new MoeException("rank " + r + " of " + ranks + " holds no expert (" + owner.length + " experts)");
            }
        }
    }

    /**
     * Contiguous slices: rank g holds experts [g·E/N, (g+1)·E/N) (the first E mod N ranks one more), which a load
     * takes as a zero-copy slice of the checkpoint's stacked tensors.
     */
    public static ExpertPlacement contiguous(int experts, int ranks) {
        if (ranks <= 0 || experts < ranks) {
            throw new MoeException(experts + " experts cannot be spread over " + ranks + " ranks");
        }
        int[] owner = new int[experts];
        int base = experts / ranks;
        int extra = experts % ranks;
        int e = 0;
        for (int r = 0; r < ranks; r++) {
            int n = base + (r < extra ? 1 : 0);
            for (int i = 0; i < n; i++) {
                owner[e++] = r;
            }
        }
        return new ExpertPlacement(owner, ranks);
    }

    @Override
    public int[] owner() {
        return owner.clone();
    }

    public int numExperts() {
        return owner.length;
    }

    public int ownerOf(int expert) {
        return owner[expert];
    }

    /** The global ids rank {@code rank} holds, ascending: its {@link MoeLayerOptions#localExperts()}. */
    public int[] localExperts(int rank) {
        return java.util.stream.IntStream.range(0, owner.length).filter(e -> owner[e] == rank).toArray();
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ExpertPlacement p && p.ranks == ranks && Arrays.equals(p.owner, owner);
    }

    @Override
    public int hashCode() {
        return 31 * Arrays.hashCode(owner) + ranks;
    }
}

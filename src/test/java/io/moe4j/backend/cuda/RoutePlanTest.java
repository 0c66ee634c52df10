package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.backend.TokenGroups;
import io.moe4j.activation.Activation;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.Routing;
import java.lang.foreign.Arena;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** The host side of a forward call: grouping pairs by expert, and the batches the kernels read. No GPU needed. */
class RoutePlanTest {

    private static ExpertWeights weights(Arena arena, int experts) {
        return RandomWeights.layer(arena, new SplittableRandom(1), RandomWeights.Layout.dense(WeightFormat.BF16,
                CodeType.BF16), experts, 8, 4, Activation.SILU_AND_MUL, GateLayout.CONCATENATED, false,
                ActivationQuant.NONE, ActivationQuant.NONE);
    }

    @Test
    void groupsPairsByExpertLikeTokenGroupsAndRemembersWhereEachChoiceWent() {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights w = weights(arena, 6).withExpertMap(new int[] {0, -1, 1, 2, -1, 3, 4, 5});
            Routing r = RandomWeights.routing(new SplittableRandom(3), 23, 3, 8, false);
            RoutePlan plan = RoutePlan.of(r, w);
            TokenGroups tg = TokenGroups.of(r, w);
            assertThat(plan.pairToken()).containsExactly(tg.token());
            assertThat(plan.pairWeight()).containsExactly(tg.weight());
            assertThat(plan.groupExpert()).containsExactly(tg.experts());
            assertThat(plan.groupStart()).containsExactly(tg.start());
            for (int i = 0; i < r.ids().length; i++) {
                int p = plan.tokenPair()[i];
                int local = w.localExpert(r.ids()[i]);
                if (local < 0) {
                    assertThat(p).isEqualTo(-1);
                } else {
                    assertThat(plan.pairToken()[p]).isEqualTo(i / 3);
                    assertThat(plan.pairExpert()[p]).isEqualTo(local);
                    assertThat(plan.pairWeight()[p]).isEqualTo(r.weights()[i]);
                }
            }
        }
    }

    @Test
    void piecesCoverEachGroupInOrderWithinTheSizeLimit() {
        try (Arena arena = Arena.ofConfined()) {
            ExpertWeights w = weights(arena, 4);
            Routing r = RandomWeights.routing(new SplittableRandom(4), 50, 2, 4, false);
            RoutePlan plan = RoutePlan.of(r, w);
            int[] pieces = plan.pieces(8);
            int covered = 0;
            for (int i = 0; i < pieces.length; i += 4) {
                assertThat(pieces[i + 1]).as("pieces are contiguous").isEqualTo(covered);
                assertThat(pieces[i + 2]).isBetween(1, 8);
                for (int p = pieces[i + 1]; p < pieces[i + 1] + pieces[i + 2]; p++) {
                    assertThat(plan.pairExpert()[p]).isEqualTo(pieces[i]);
                }
                covered += pieces[i + 2];
            }
            assertThat(covered).isEqualTo(plan.pairs()).isEqualTo(100);
            int[] routes = plan.routes(true);
            assertThat(routes[1]).isEqualTo(plan.pairToken()[0]);
            assertThat(plan.routes(false)[2 * 7 + 1]).isEqualTo(7);
        }
    }

    /**
     * A plan built on the device pads its batches, GEMV pieces and M tiles to {@link CudaExperts#mostPieces}: no
     * routing may need more than that (else the plan kernel would write past its grid), whether the pairs spread over
     * every expert, crowd onto one, or fall unevenly.
     */
    @Test
    void noRoutingNeedsMorePiecesThanTheDeviceGridHolds() {
        SplittableRandom rnd = new SplittableRandom(5);
        try (Arena arena = Arena.ofConfined()) {
            for (int experts : new int[] {1, 4, 32}) {
                ExpertWeights w = weights(arena, experts);
                for (int round = 0; round < 60; round++) {
                    int k = 1 + rnd.nextInt(Math.min(experts, 4));
                    int tokens = 1 + rnd.nextInt(300);
                    Routing r = switch (round % 3) {
                        case 0 -> RandomWeights.routing(rnd, tokens, k, experts, false);
                        case 1 -> skewed(rnd, tokens, k, experts, 1); // the first k experts take everything
                        default -> skewed(rnd, tokens, k, experts, 1 + rnd.nextInt(experts));
                    };
                    RoutePlan plan = RoutePlan.of(r, w);
                    for (int size : new int[] {1, 4, 8, 64, 128}) {
                        assertThat(plan.pieces(size).length / 4)
                                .as("%d experts, %d tokens of top-%d, pieces of %d", experts, tokens, k, size)
                                .isLessThanOrEqualTo(CudaExperts.mostPieces(tokens * k, experts, size));
                    }
                }
            }
        }
    }

    /** Each token's k choices among the first {@code span} experts (at least k), distinct, weights 1/k. */
    private static Routing skewed(SplittableRandom rnd, int tokens, int k, int experts, int span) {
        int width = Math.min(experts, Math.max(k, span));
        int[] ids = new int[tokens * k];
        float[] weights = new float[tokens * k];
        for (int t = 0; t < tokens; t++) {
            int start = rnd.nextInt(width - k + 1);
            for (int j = 0; j < k; j++) {
                ids[t * k + j] = start + j;
                weights[t * k + j] = 1f / k;
            }
        }
        return new Routing(tokens, k, ids, weights, false);
    }
}

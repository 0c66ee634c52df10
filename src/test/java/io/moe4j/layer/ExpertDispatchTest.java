package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.routing.Routing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The all-to-all form of expert parallelism, with the exchange done in memory: each simulated rank routes its own
 * rows, sends each row once to every rank that holds one of its experts, the ranks run their slices on what they
 * received, the partial rows come back and are summed at home with the shared experts, which the home rank runs on
 * its own rows. The reassembled output must be the whole layer's, on every conformance case and both CPU backends.
 * Only the transport differs on GPUs (NCCL grouped send/recv of the same packed buffers).
 */
class ExpertDispatchTest {

    static Stream<Arguments> cases() {
        List<Arguments> out = new ArrayList<>();
        for (String backend : List.of("emulation", "cpu")) {
            for (String name : ConformanceCases.names()) {
                out.add(Arguments.of(backend, name));
            }
        }
        return out.stream();
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("cases")
    void simulatedAllToAllGivesTheWholeLayer(String backend, String name) {
        ConformanceCases.Case c = ConformanceCases.load(name);
        MoeLayerOptions options = MoeLayerOptions.defaults().withBackend(backend).withThreads(2);
        try (MoeLayer whole = MoeLayer.load(c.dir(), c.layer(), options)) {
            int h = whole.config().hidden();
            float[] x = ForwardJob.readInput(c.dir().resolve("io.safetensors"), "hidden_states", h);
            int t = x.length / h;
            MoeOutput want = whole.forward(x, t);
            // Two ranks with alternate rows; three ranks of which the last has no rows of its own this step.
            int experts = whole.config().numExperts();
            for (int[] ranksAndUsed : new int[][] {{2, 2}, {3, 2}}) {
                check(c.dir(), c.layer(), options, x, t, h, want, homes(t, ranksAndUsed[1]),
                        ExpertPlacement.contiguous(experts, ranksAndUsed[0]), name);
            }
        }
    }

    /** The home rank of each of t rows: round-robin over ranks 0 .. used − 1. */
    private static int[] homes(int t, int used) {
        int[] home = new int[t];
        for (int i = 0; i < t; i++) {
            home[i] = i % used;
        }
        return home;
    }

    private static void check(Path dir, int layer, MoeLayerOptions options, float[] x, int t, int h, MoeOutput want,
                              int[] home, ExpertPlacement placement, String name) {
        int ranks = placement.ranks();
        List<MoeLayer> layers = new ArrayList<>();
        try {
            for (int r = 0; r < ranks; r++) {
                layers.add(MoeLayer.load(dir, layer, options.withLocalExperts(placement.localExperts(r))
                        .withSharedExperts(SharedExperts.ADD)));
            }
            // Each rank: its own rows, their routing, its dispatch plan.
            float[][] own = new float[ranks][];
            int[][] ownRows = new int[ranks][];
            ExpertDispatch[] plans = new ExpertDispatch[ranks];
            int sent = 0;
            for (int r = 0; r < ranks; r++) {
                int rank = r;
                ownRows[r] = java.util.stream.IntStream.range(0, t).filter(i -> home[i] == rank).toArray();
                own[r] = new float[ownRows[r].length * h];
                for (int i = 0; i < ownRows[r].length; i++) {
                    System.arraycopy(x, ownRows[r][i] * h, own[r], i * h, h);
                }
                Routing routing = layers.get(r).route(own[r], ownRows[r].length);
                for (int i = 0; i < ownRows[r].length; i++) {
                    int k = routing.topK();
                    assertThat(Arrays.copyOfRange(routing.ids(), i * k, (i + 1) * k)).as("routing of row %d", ownRows[r][i])
                            .containsExactly(Arrays.copyOfRange(want.routing().ids(), ownRows[r][i] * k, (ownRows[r][i] + 1) * k));
                }
                plans[r] = ExpertDispatch.plan(routing, h, placement);
                for (int p = 0; p < ranks; p++) {
                    sent += plans[r].count(p);
                }
            }
            int topK = want.routing().topK();
            assertThat(sent).as("rows sent: each once per rank holding one of its experts")
                    .isBetween(t, t * Math.min(topK, ranks));
            // The exchange: rank p receives, from every rank in order, the rows sent to it, and computes its slice.
            float[][] partials = new float[ranks][];
            for (int p = 0; p < ranks; p++) {
                int n = 0;
                Routing[] parts = new Routing[ranks];
                for (int r = 0; r < ranks; r++) {
                    n += plans[r].count(p);
                    parts[r] = plans[r].packRouting(p);
                }
                float[] received = new float[n * h];
                int at = 0;
                for (int r = 0; r < ranks; r++) {
                    float[] packed = plans[r].pack(own[r], p);
                    System.arraycopy(packed, 0, received, at, packed.length);
                    at += packed.length;
                }
                partials[p] = new float[n * h];
                layers.get(p).routed(received, n, ExpertDispatch.concat(parts), partials[p]);
            }
            // The return trip: each home rank takes back its rows' partials from every rank and adds shared experts.
            float[] got = new float[t * h];
            for (int r = 0; r < ranks; r++) {
                float[] out = new float[own[r].length];
                for (int p = 0; p < ranks; p++) {
                    int offset = 0;
                    for (int q = 0; q < r; q++) {
                        offset += plans[q].count(p);
                    }
                    plans[r].combine(p, Arrays.copyOfRange(partials[p], offset * h, (offset + plans[r].count(p)) * h), out);
                }
                layers.get(r).shared(own[r], ownRows[r].length, out);
                for (int i = 0; i < ownRows[r].length; i++) {
                    System.arraycopy(out, i * h, got, ownRows[r][i] * h, h);
                }
            }
            assertThat(relL2(got, want.output())).as("%s over %d ranks", name, ranks).isLessThan(1e-6);
        } finally {
            layers.forEach(MoeLayer::close);
        }
    }

    @Test
    void planSendsARowOnceToEachRankHoldingOneOfItsExperts() {
        ExpertPlacement placement = ExpertPlacement.contiguous(8, 4);
        assertThat(placement.localExperts(3)).containsExactly(6, 7);
        Routing routing = new Routing(3, 2, new int[] {0, 1, 1, 6, 4, 5}, new float[] {0.5f, 0.5f, 0.7f, 0.3f, 0.9f, 0.1f},
                false);
        ExpertDispatch plan = ExpertDispatch.plan(routing, 2, placement);
        assertThat(new int[] {plan.count(0), plan.count(1), plan.count(2), plan.count(3)}).containsExactly(2, 0, 1, 1);
        assertThat(plan.rows(0)).containsExactly(0, 1);
        assertThat(plan.rows(3)).containsExactly(1);
        float[] x = {1, 2, 3, 4, 5, 6};
        assertThat(plan.pack(x, 0)).containsExactly(1, 2, 3, 4);
        assertThat(plan.pack(x, 2)).containsExactly(5, 6);
        assertThat(plan.pack(x, 1)).isEmpty();
        Routing toThree = plan.packRouting(3);
        assertThat(toThree.ids()).containsExactly(1, 6);
        assertThat(toThree.weights()).containsExactly(0.7f, 0.3f);
        float[] out = new float[6];
        plan.combine(0, new float[] {10, 20, 30, 40}, out);
        plan.combine(3, new float[] {1, 1}, out);
        assertThat(out).containsExactly(10, 20, 31, 41, 0, 0);
        assertThatThrownBy(() -> plan.combine(2, new float[3], out)).isInstanceOf(MoeException.class)
                .hasMessageContaining("rank 2 returned 3 values for 1 rows of 2");
    }

    @Test
    void placementsSpreadExpertsAndRefuseEmptyRanks() {
        assertThat(ExpertPlacement.contiguous(10, 4).owner()).containsExactly(0, 0, 0, 1, 1, 1, 2, 2, 3, 3);
        assertThatThrownBy(() -> ExpertPlacement.contiguous(2, 4)).isInstanceOf(MoeException.class)
                .hasMessageContaining("2 experts cannot be spread over 4 ranks");
        assertThatThrownBy(() -> new ExpertPlacement(new int[] {0, 0, 2}, 3)).isInstanceOf(MoeException.class)
                .hasMessageContaining("rank 1 of 3 holds no expert");
        assertThatThrownBy(() -> new ExpertPlacement(new int[] {0, 5}, 2)).isInstanceOf(MoeException.class)
                .hasMessageContaining("expert 1 is placed on rank 5");
        assertThatThrownBy(() -> ExpertDispatch.plan(new Routing(1, 1, new int[] {9}, new float[] {1}, false), 4,
                ExpertPlacement.contiguous(8, 2))).isInstanceOf(MoeException.class)
                .hasMessageContaining("routed to expert 9");
    }
}

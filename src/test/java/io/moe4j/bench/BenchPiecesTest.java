package io.moe4j.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The benchmark's parts on a small layer: JSON lines, timings and byte counts, bandwidth, names. */
class BenchPiecesTest {

    @Test
    void jsonLineHasExactlyTheDocumentedKeys() throws Exception {
        BenchResult r = new BenchResult("gpt-oss-20b", "mxfp4", "cpu", 1, 2, "random", 1.5, 666.7, 12.3, 52876800L,
                35.25, 60.5);
        JsonNode j = new ObjectMapper().readTree(r.json());
        List<String> keys = new ArrayList<>();
        j.fieldNames().forEachRemaining(keys::add);
        assertThat(keys).containsExactly("preset", "scheme", "backend", "tokens", "threads", "routing", "ms_per_call",
                "tokens_per_s", "gflops", "weight_bytes", "effective_gbps", "machine_gbps");
        assertThat(j.get("weight_bytes").asLong()).isEqualTo(52876800L);
        assertThat(j.get("effective_gbps").asDouble()).isEqualTo(35.25);
        assertThat(r.json()).doesNotContain("\n");
        assertThat(r.tableRow()).contains("0.58"); // effective / machine
    }

    @Test
    void timingCountsTheDistinctExpertsOfEachCall() {
        try (Arena arena = Arena.ofShared()) {
            ExpertWeights w = smallMxfp4Layer(6, arena);
            LayerBench bench = new LayerBench(w, 2, 3);
            try (Experts e = new EmulationBackend().prepare(w, new ExecutionOptions(1))) {
                int[] calls = new int[1];
                assertThat(bench.warmUp(e, 1, false, 3, 0, n -> calls[0] += n)).isEqualTo(3);
                assertThat(calls[0]).isEqualTo(3);
                LayerBench.Timing fixed = bench.measure(e, 1, true, 4, n -> {
                });
                assertThat(fixed.bytesPerCall()).isEqualTo(2 * w.bytesPerExpert());
                assertThat(fixed.secondsPerCall()).isPositive();
                assertThat(fixed.calls()).isGreaterThanOrEqualTo(4);
                assertThat(fixed.totalFlops()).isEqualTo(fixed.calls() * 2 * 2.0 * (64 * 64 + 64 * 32));
                LayerBench.Timing wide = bench.measure(e, 8, false, 4, n -> {
                });
                assertThat(wide.bytesPerCall()).isBetween(2 * w.bytesPerExpert(), 6 * w.bytesPerExpert());
                assertThat(wide.effectiveGbps()).isEqualTo(wide.totalBytes() / wide.totalSeconds() / 1e9);
            }
        }
    }

    @Test
    void fixedRoutingWarmsUpOnTheDrawItTimes() {
        try (Arena arena = Arena.ofShared()) {
            ExpertWeights w = smallMxfp4Layer(8, arena);
            LayerBench bench = new LayerBench(w, 2, 3);
            List<List<Integer>> seen = new ArrayList<>();
            Experts recorder = new Experts() {
                @Override
                public void forward(float[] x, int tokens, Routing routing, float[] out) {
                    seen.add(Arrays.stream(routing.ids()).boxed().toList());
                }

                @Override
                public String backend() {
                    return "recorder";
                }
            };
            bench.warmUp(recorder, 16, true, 3, 0, n -> {
            });
            bench.measure(recorder, 16, true, 3, n -> {
            });
            assertThat(seen).hasSizeGreaterThanOrEqualTo(6);
            assertThat(seen).allSatisfy(ids -> assertThat(ids).isEqualTo(seen.getFirst()));
            seen.clear();
            bench.measure(recorder, 16, false, 3, n -> {
            });
            assertThat(seen.stream().distinct().count()).isGreaterThan(1); // random routing draws anew each call
        }
    }

    /** An MXFP4 layer of {@code experts} experts, H 64, I 32, SwiGLU-OAI on interleaved rows, with biases. */
    private static ExpertWeights smallMxfp4Layer(int experts, Arena arena) {
        SyntheticWeights.Shape shape = new SyntheticWeights.Shape(experts, 64, 32, GateLayout.INTERLEAVED,
                Activation.SWIGLU_OAI, true);
        return SyntheticWeights.generate(SyntheticScheme.MXFP4, shape, 1, arena, b -> {
        });
    }

    @Test
    void bandwidthIsPositiveAndFinite() {
        double gbps = MemoryBandwidth.measure(2, 32L << 20, 1);
        assertThat(gbps).isPositive().isFinite();
    }

    @Test
    void presetsAndSchemesByName() {
        assertThat(BenchPreset.fromCliName("qwen3-30b-a3b").schemes()).containsExactly(SyntheticScheme.NVFP4,
                SyntheticScheme.FP8_BLOCK, SyntheticScheme.W4A16);
        assertThat(SyntheticScheme.fromCliName("fp8-block")).isEqualTo(SyntheticScheme.FP8_BLOCK);
        assertThatThrownBy(() -> BenchPreset.fromCliName("llama-7b")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown preset 'llama-7b'; choose one of gpt-oss-20b, qwen3-30b-a3b, mixtral-8x7b");
        assertThatThrownBy(() -> SyntheticScheme.fromCliName("q4_0")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown scheme 'q4_0'; choose one of mxfp4,");
    }
}

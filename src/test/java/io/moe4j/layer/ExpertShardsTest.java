package io.moe4j.layer;

import io.moe4j.cli.ForwardJob;
import io.moe4j.config.ModelConfig;
import io.moe4j.conformance.ConformanceCases;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Expert parallelism on one machine: layers that hold disjoint slices of the routed experts (whose union is all of
 * them) sum back to the whole layer, shared experts included — added by the slice that holds expert 0 and by no
 * other. Every layer with shared experts of the conformance cases and of the whole-model cases, on emulation and cpu,
 * for three partitions (even/odd ids, and three uneven slices, one of them not contiguous).
 */
class ExpertShardsTest {
    private static final List<String> BACKENDS = List.of("emulation", "cpu");

    /** The layers with shared experts: (backend, label, checkpoint directory, layer, whether it stores the layer input). */
    static Stream<Arguments> layers() {
        List<Arguments> out = new ArrayList<>();
        List<String> found = new ArrayList<>();
        for (String name : ConformanceCases.names()) {
            ConformanceCases.Case c = ConformanceCases.load(name);
            if (ModelConfig.load(c.dir()).layer(c.layer()).shared() != null) {
                found.add(name);
                for (String backend : BACKENDS) {
                    out.add(Arguments.of(backend, name, c.dir(), c.layer(), true));
                }
            }
        }
        Path models = ConformanceCases.shared().resolve("conformance-models");
        for (Path dir : modelDirs(models)) {
            ModelConfig model = ModelConfig.load(dir);
            for (int layer : model.moeLayers()) {
                if (model.layer(layer).shared() != null) {
                    found.add(dir.getFileName() + "/" + layer);
                    for (String backend : BACKENDS) {
                        out.add(Arguments.of(backend, dir.getFileName() + " layer " + layer, dir, layer, false));
                    }
                }
            }
        }
        // The families with shared experts must all be here; an empty list would make this test pass vacuously.
        assertThat(found).anyMatch(n -> n.startsWith("deepseek_")).anyMatch(n -> n.startsWith("llama4_"))
                .anyMatch(n -> n.startsWith("m_deepseek_")).anyMatch(n -> n.startsWith("m_llama4_"));
        return out.stream();
    }

    private static List<Path> modelDirs(Path root) {
        if (!Files.isDirectory(root)) {
            throw new IllegalStateException("whole-model fixtures not found at " + root.toAbsolutePath());
        }
        try (Stream<Path> s = Files.list(root)) {
            return s.filter(d -> Files.isRegularFile(d.resolve("config.json"))).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @ParameterizedTest(name = "{0}: {1}")
    @MethodSource("layers")
    void slicesSumToTheWholeLayerWithSharedExpertsOnce(String backend, String label, Path dir, int layer,
                                                        boolean layerInput) {
        MoeLayerOptions options = MoeLayerOptions.defaults().withBackend(backend).withThreads(2);
        try (MoeLayer whole = MoeLayer.load(dir, layer, options)) {
            assertThat(whole.addsSharedExperts()).isTrue();
            int h = whole.config().hidden();
            int e = whole.config().numExperts();
            float[] x = input(dir, h, layerInput);
            int t = x.length / h;
            float[] want = whole.forward(x, t).output();
            for (int[][] partition : partitions(e)) {
                float[] sum = new float[want.length];
                float[] twice = new float[want.length];
                int adders = 0;
                for (int[] slice : partition) {
                    try (MoeLayer part = MoeLayer.load(dir, layer, options.withLocalExperts(slice));
                         MoeLayer always = MoeLayer.load(dir, layer,
                                 options.withLocalExperts(slice).withSharedExperts(SharedExperts.ADD))) {
                        adders += part.addsSharedExperts() ? 1 : 0;
                        add(sum, part.forward(x, t).output());
                        add(twice, always.forward(x, t).output());
                    }
                }
                String what = label + " on " + backend + ", slices " + describe(partition);
                assertThat(adders).as("slices adding the shared experts: %s", what).isEqualTo(1);
                // Float sums in another order: within a few ulps of the whole layer's output.
                assertThat(relL2(sum, want)).as("sum of slices vs whole layer: %s", what).isLessThan(1e-6);
                // The check can fail: shared experts added by every slice move the sum far from the layer.
                assertThat(relL2(twice, want)).as("every slice adding the shared experts: %s", what)
                        .isGreaterThan(1e-2);
            }
        }
    }

    /** Even/odd ids; and {E-1, 0} (not contiguous), {1 .. E/2}, {E/2+1 .. E-2}. */
    private static List<int[][]> partitions(int e) {
        int[] even = IntStream.range(0, e).filter(i -> i % 2 == 0).toArray();
        int[] odd = IntStream.range(0, e).filter(i -> i % 2 == 1).toArray();
        int[] wrap = {e - 1, 0};
        int[] low = IntStream.rangeClosed(1, e / 2).toArray();
        int[] high = IntStream.rangeClosed(e / 2 + 1, e - 2).toArray();
        return List.of(new int[][] {even, odd}, new int[][] {low, wrap, high});
    }

    private static String describe(int[][] partition) {
        StringBuilder s = new StringBuilder();
        for (int[] slice : partition) {
            s.append(java.util.Arrays.toString(slice));
        }
        return s.toString();
    }

    private static void add(float[] into, float[] part) {
        for (int i = 0; i < into.length; i++) {
            into[i] += part[i];
        }
    }

    /**
     * A conformance case's own hidden states; for a whole-model case (which stores token ids, not a layer's input)
     * seven seeded normal rows, the scale of an RMS-normed hidden state.
     */
    private static float[] input(Path dir, int hidden, boolean layerInput) {
        if (layerInput) {
            return ForwardJob.readInput(dir.resolve("io.safetensors"), "hidden_states", hidden);
        }
        SplittableRandom random = new SplittableRandom(23);
        float[] x = new float[7 * hidden];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) random.nextGaussian();
        }
        return x;
    }
}

package io.moe4j.model.linear;

import io.moe4j.config.ModelConfig;
import io.moe4j.safetensors.Checkpoint;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every dense linear of the whole-model fixtures, on both backends: layer 0's and lm_head load, emulation matches a
 * float64 computation from the format decoders, cpu matches emulation, and the quantization config's exclusion
 * rules quantize exactly the dense linears the case counts.
 */
class ModelLinearsTest {
    static List<String> cases() {
        return ModelCases.names();
    }

    private static double relL2(double[] expected, float[] actual) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < expected.length; i++) {
            num += (actual[i] - expected[i]) * (actual[i] - expected[i]);
            den += expected[i] * expected[i];
        }
        return Math.sqrt(num / den);
    }

    private static double relL2(float[] expected, float[] actual) {
        double[] e = new double[expected.length];
        for (int i = 0; i < e.length; i++) {
            e[i] = expected[i];
        }
        return relL2(e, actual);
    }

    private static float[] randomInput(int tokens, int in, long seed) {
        Random r = new Random(seed);
        float[] x = new float[tokens * in];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) r.nextGaussian();
        }
        return x;
    }

    private static List<DenseModules.Module> layerZeroAndHead(ModelConfig config) {
        List<DenseModules.Module> m = new ArrayList<>(DenseModules.layer(config, 0));
        DenseModules.Module head = DenseModules.lmHead(config);
        m.add(head);
        // What a tied lm_head multiplies with.
        m.add(new DenseModules.Module("model.embed_tokens", head.in(), head.out(), false));
        return m;
    }

    @ParameterizedTest
    @MethodSource("cases")
    void emulationMatchesAFloat64DecodeOfTheCheckpoint(String name) {
        ModelConfig config = ModelConfig.load(ModelCases.dir(name));
        String scheme = ModelCases.caseJson(name).get("scheme").asText();
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(name));
             LinearFactory f = Linears.factory(ckpt, config, "emulation", 2)) {
            for (DenseModules.Module m : layerZeroAndHead(config)) {
                Linear linear = f.load(m.name(), m.in(), m.out(), m.bias());
                assertThat(linear.inFeatures()).isEqualTo(m.in());
                assertThat(linear.outFeatures()).isEqualTo(m.out());
                int tokens = 5;
                float[] x = randomInput(tokens, m.in(), m.name().hashCode());
                float[] y = new float[tokens * m.out()];
                linear.forward(x, tokens, y);
                double[] expected = IndependentReference.of(ckpt, scheme, m.name(), m.in(), m.out(), m.bias())
                        .forward(x, tokens);
                assertThat(relL2(expected, y)).as("%s %s (%s)", name, m.name(), linear.describe()).isLessThan(1e-6);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("cases")
    void cpuAgreesWithEmulationOnEveryLinearOfLayerZeroAndLmHead(String name) {
        ModelConfig config = ModelConfig.load(ModelCases.dir(name));
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(name));
             LinearFactory emu = Linears.factory(ckpt, config, "emulation", 1);
             LinearFactory cpu = Linears.factory(ckpt, config, "cpu", 2)) {
            for (DenseModules.Module m : layerZeroAndHead(config)) {
                Linear a = emu.load(m.name(), m.in(), m.out(), m.bias());
                LoadedLinear b = (LoadedLinear) cpu.load(m.name(), m.in(), m.out(), m.bias());
                assertThat(b.scheme()).isEqualTo(((LoadedLinear) a).scheme());
                assertThat(b.weightBytes()).isPositive();
                // 1 and 3 tokens take the fused GEMV, 9 the decode-then-dot kernels.
                for (int tokens : new int[]{1, 3, 9}) {
                    float[] x = randomInput(tokens, m.in(), 31L * tokens + m.name().hashCode());
                    float[] ya = new float[tokens * m.out()];
                    float[] yb = new float[tokens * m.out()];
                    a.forward(x, tokens, ya);
                    b.forward(x, tokens, yb);
                    assertThat(relL2(ya, yb)).as("%s %s, %d tokens (%s)", name, m.name(), tokens, b.describe())
                            .isLessThan(1e-5);
                }
            }
        }
    }

    /**
     * A cpu linear's dense form (float rows and input rule, what MLA's absorbed decode multiplies) computes what its
     * forward computes, for every bias-free linear of layer 0 and lm_head; linears with a bias give none.
     */
    @ParameterizedTest
    @MethodSource("cases")
    void theDenseFormOfEveryCpuLinearComputesItsForward(String name) {
        ModelConfig config = ModelConfig.load(ModelCases.dir(name));
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(name));
             LinearFactory cpu = Linears.factory(ckpt, config, "cpu", 2)) {
            for (DenseModules.Module m : layerZeroAndHead(config)) {
                Linear linear = cpu.load(m.name(), m.in(), m.out(), m.bias());
                if (m.bias()) {
                    assertThat(linear.denseForm()).as("%s %s", name, m.name()).isEmpty();
                    continue;
                }
                DenseForm dense = linear.denseForm().orElseThrow();
                assertThat(dense.inFeatures()).isEqualTo(m.in());
                assertThat(dense.outFeatures()).isEqualTo(m.out());
                int tokens = 2;
                float[] x = randomInput(tokens, m.in(), 7L + m.name().hashCode());
                float[] y = new float[tokens * m.out()];
                linear.forward(x, tokens, y);
                double[] fromDense = new double[tokens * m.out()];
                for (int t = 0; t < tokens; t++) {
                    float[] row = java.util.Arrays.copyOfRange(x, t * m.in(), (t + 1) * m.in());
                    dense.input().apply(row, 0, m.in());
                    for (int o = 0; o < m.out(); o++) {
                        double acc = 0;
                        for (int i = 0; i < m.in(); i++) {
                            acc += (double) row[i] * dense.weight()[o * m.in() + i];
                        }
                        fromDense[t * m.out() + o] = acc;
                    }
                }
                assertThat(relL2(fromDense, y)).as("%s %s (%s)", name, m.name(), linear.describe()).isLessThan(1e-5);
            }
        }
    }

    @ParameterizedTest
    @MethodSource("cases")
    void quantizesExactlyTheDenseLinearsTheCaseCounts(String name) {
        ModelConfig config = ModelConfig.load(ModelCases.dir(name));
        int expected = ModelCases.caseJson(name).get("quantized_dense_linears").asInt();
        int quantized = 0;
        List<String> modules = new ArrayList<>();
        try (Checkpoint ckpt = Checkpoint.open(ModelCases.dir(name));
             LinearFactory f = Linears.factory(ckpt, config, "emulation", 1)) {
            for (int l = 0; l < config.numLayers(); l++) {
                for (DenseModules.Module m : DenseModules.layer(config, l)) {
                    LoadedLinear linear = (LoadedLinear) f.load(m.name(), m.in(), m.out(), m.bias());
                    modules.add(m.name());
                    if (linear.quantized()) {
                        quantized++;
                    }
                }
            }
            DenseModules.Module head = DenseModules.lmHead(config);
            assertThat(((LoadedLinear) f.load(head.name(), head.in(), head.out(), false)).quantized())
                    .as("lm_head of %s", name).isFalse();
        }
        assertThat(quantized).as("quantized dense linears of %s among %s", name, modules).isEqualTo(expected);
    }
}

package io.moe4j.bench;

import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;

import java.util.Arrays;
import java.util.List;

/** MoE layer shapes of real models, with the schemes their checkpoints ship in. */
public enum BenchPreset {
    GPT_OSS_20B("gpt-oss-20b", 32, 4, 2880, 2880, GateLayout.INTERLEAVED, Activation.SWIGLU_OAI, true,
            List.of(SyntheticScheme.MXFP4)),
    QWEN3_30B_A3B("qwen3-30b-a3b", 128, 8, 2048, 768, GateLayout.CONCATENATED, Activation.SILU_AND_MUL, false,
            List.of(SyntheticScheme.NVFP4, SyntheticScheme.FP8_BLOCK, SyntheticScheme.W4A16)),
    MIXTRAL_8X7B("mixtral-8x7b", 8, 2, 4096, 14336, GateLayout.CONCATENATED, Activation.SILU_AND_MUL, false,
            List.of(SyntheticScheme.MXFP4, SyntheticScheme.W4A16));

    private final String cliName;
    private final int experts;
    private final int topK;
    private final int hidden;
    private final int intermediate;
    private final GateLayout gateLayout;
    private final Activation activation;
    private final boolean biases;
    private final List<SyntheticScheme> schemes;

    BenchPreset(String cliName, int experts, int topK, int hidden, int intermediate, GateLayout gateLayout,
                Activation activation, boolean biases, List<SyntheticScheme> schemes) {
        this.cliName = cliName;
        this.experts = experts;
        this.topK = topK;
        this.hidden = hidden;
        this.intermediate = intermediate;
        this.gateLayout = gateLayout;
        this.activation = activation;
        this.biases = biases;
        this.schemes = schemes;
    }

    public static BenchPreset fromCliName(String name) {
        for (BenchPreset p : values()) {
            if (p.cliName.equalsIgnoreCase(name.trim())) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown preset '" + name + "'; choose one of "
                + String.join(", ", Arrays.stream(values()).map(BenchPreset::cliName).toList()));
    }

    public String cliName() {
        return cliName;
    }

    public int topK() {
        return topK;
    }

    /** The schemes this model's checkpoints come in, the first being the usual one. */
    public List<SyntheticScheme> schemes() {
        return schemes;
    }

    public SyntheticWeights.Shape shape() {
        return new SyntheticWeights.Shape(experts, hidden, intermediate, gateLayout, activation, biases);
    }
}

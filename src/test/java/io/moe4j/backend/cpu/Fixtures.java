package io.moe4j.backend.cpu;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.SplittableRandom;

/** Shared helpers of the cpu backend tests: small odd-sized layers, random routing, the reference. */
final class Fixtures {
    private Fixtures() {
    }

    /**
     * Odd sizes the code type allows: 8-bit and wider codes take any column count, so hidden 97 and intermediate 37
     * (w2 has 97 rows, w13 74 or 37); 4-bit codes need even counts and FP6 multiples of 4 (four codes in 3 bytes), so
     * hidden 100 and intermediate 38 or 36. None is a multiple of the panel height 8 or of the scale groups.
     */
    static SyntheticWeights.Shape shape(SyntheticScheme s, GateLayout layout, int experts) {
        int h;
        int i;
        if (s.codes() == CodeType.FP6_E3M2 || s.codes() == CodeType.FP6_E2M3) {
            h = 100;
            i = 36;
        } else if (s.codes().bits() == 4) {
            h = 100;
            i = 38;
        } else {
            h = 97;
            i = 37;
        }
        Activation a = switch (layout) {
            case INTERLEAVED -> Activation.SWIGLU_OAI;
            case CONCATENATED -> Activation.SILU_AND_MUL;
            case NONE -> Activation.GELU;
        };
        return new SyntheticWeights.Shape(experts, h, i, layout, a, layout == GateLayout.INTERLEAVED);
    }

    static ExpertWeights weights(SyntheticScheme s, SyntheticWeights.Shape shape, long seed, Arena arena) {
        return SyntheticWeights.generate(s, shape, seed, arena, b -> {
        });
    }

    /** Each token picks k distinct experts of {@code globalExperts} at random, ids sorted, positive weights. */
    static Routing routing(int tokens, int k, int globalExperts, boolean weightOnInput, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        int[] ids = new int[tokens * k];
        float[] wts = new float[tokens * k];
        for (int t = 0; t < tokens; t++) {
            int[] pick = rnd.ints(0, globalExperts).distinct().limit(k).sorted().toArray();
            System.arraycopy(pick, 0, ids, t * k, k);
            for (int j = 0; j < k; j++) {
                wts[t * k + j] = (float) (0.1 + rnd.nextDouble());
            }
        }
        return new Routing(tokens, k, ids, wts, weightOnInput);
    }

    static float[] run(Experts experts, float[] x, int tokens, Routing r, int hidden) {
        float[] out = new float[tokens * hidden];
        Arrays.fill(out, Float.NaN); // forward must write every value
        experts.forward(x, tokens, r, out);
        return out;
    }

    static float[] reference(ExpertWeights w, float[] x, int tokens, Routing r) {
        try (Experts ref = new EmulationBackend().prepare(w, new ExecutionOptions(1))) {
            return run(ref, x, tokens, r, w.hidden());
        }
    }
}

package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.backend.KernelActivations;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;

import java.util.Optional;

/**
 * Which layers the cpu backend runs with {@link KernelActivations#INT8}: weights whose codes are integers or map to
 * integers exactly (INT4, INT8, and FP4 E2M1 as twice its value), with activations the checkpoint keeps in float
 * (the weight-only and bf16-activation schemes), on the Vector API kernels. Everything else is refused with the
 * reason, never run in float instead. No Vector API types here: the backend asks before the kernels are loaded.
 */
final class Int8Support {
    private Int8Support() {
    }

    /** Why {@code scheme} cannot run with int8 kernel activations on this JVM, or empty if it can. */
    static Optional<String> refusal(QuantScheme scheme, Optional<String> noVector) {
        if (!codesSupported(scheme.weights())) {
            return Optional.of("--activations int8 needs INT4, INT8 or FP4 weight codes, and " + scheme.name()
                    + " has " + scheme.weights() + " weights");
        }
        if (scheme.activations() != ActivationFormat.NONE) {
            return Optional.of("--activations int8 is for schemes that keep activations in float, and " + scheme.name()
                    + " quantizes them as " + scheme.activations());
        }
        if (KernelSelection.scalarForced()) {
            return Optional.of("--activations int8 runs on the Vector API kernels, and -D" + KernelSelection.PROPERTY
                    + "=true forces the scalar ones");
        }
        return noVector.map(why -> "--activations int8 runs on the Vector API kernels, but " + why);
    }

    /** The oracle's reason when it can: the mode, the weights and the vector width. */
    static String reason(WeightFormat weights, int bits, String forced) {
        return "int8 activations (blocks of 32, one float scale each) with integer dot products for " + weights
                + " on " + bits + "-bit vectors (Java Vector API" + forced + ")";
    }

    /**
     * Checks the loaded weights themselves (a caller may prepare without asking the oracle).
     *
     * @throws MoeException naming the scheme and what it has
     */
    static void check(ExpertWeights w, Optional<String> noVector) {
        Optional<String> no = refusal(w.scheme(), noVector);
        if (no.isPresent()) {
            throw new MoeException(no.get());
        }
        for (ExpertMatrix m : new ExpertMatrix[] {w.w13(), w.w2()}) {
            CodeType c = m.codes();
            if (c != CodeType.INT4 && c != CodeType.INT8 && c != CodeType.FP4_E2M1) {
                throw new MoeException("--activations int8 needs INT4, INT8 or FP4 weight codes, and the experts of "
                        + w.scheme().name() + " hold " + c);
            }
        }
        if (!(w.a13() instanceof ActivationQuant.None) || !(w.a2() instanceof ActivationQuant.None)) {
            throw new MoeException("--activations int8 is for experts whose activations stay in float, and those of "
                    + w.scheme().name() + " are quantized (" + w.a13() + ", " + w.a2() + ")");
        }
    }

    private static boolean codesSupported(WeightFormat f) {
        return switch (f) {
            case MXFP4, NVFP4, INT8_TENSOR, INT8_CHANNEL, INT8_GROUP, INT4_CHANNEL, INT4_GROUP -> true;
            default -> false;
        };
    }
}

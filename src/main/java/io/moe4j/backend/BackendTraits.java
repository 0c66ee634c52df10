package io.moe4j.backend;

import io.moe4j.quant.WeightFormat;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the oracle and the layer need to know about a backend beyond "can you run this?", as data: the kernel
 * weight layout it converts the canonical weights into, the size round-up its kernels need (the seed's
 * {@code mxfp4_round_up_hidden_size_and_intermediate_size}), and the activation precisions it can run a
 * weight-only layer with besides float (the seed's {@code _backend_activation_key} variants).
 *
 * <p>A backend states its own traits by implementing {@link Provider}; otherwise the registry gives it
 * {@link #canonical()} (no padding, canonical layout, float activations only for weight-only layers).
 *
 * @param layout            the weight layout name, for every weight format not in {@code layouts}
 * @param layouts           weight layout names by weight format
 * @param alignment         the round-up for every weight format not in {@code alignments}
 * @param alignments        round-ups by weight format
 * @param activationVariants the quantized-activation variants for weight-only layers
 */
public record BackendTraits(String layout, Map<WeightFormat, String> layouts, Alignment alignment,
                            Map<WeightFormat, Alignment> alignments, List<ActivationVariant> activationVariants) {

    /** Implemented by a {@link Backend} that states its own traits. */
    public interface Provider {
        BackendTraits traits();
    }

    /** The canonical expert layout of {@code io.moe4j.quant.ExpertWeights}. */
    public static final String CANONICAL_LAYOUT = "canonical (w13 [E, 2I, H] gate rows then up rows, w2 [E, H, I]; "
            + "checkpoint codes and scales)";

    public BackendTraits {
        layouts = Map.copyOf(layouts);
        alignments = Map.copyOf(alignments);
        activationVariants = List.copyOf(activationVariants);
    }

    /** No padding, the canonical layout, no activation variants. */
    public static BackendTraits canonical() {
        return new BackendTraits(CANONICAL_LAYOUT, Map.of(), Alignment.NONE, Map.of(), List.of());
    }

    public static BackendTraits withLayout(String layout) {
        return new BackendTraits(layout, Map.of(), Alignment.NONE, Map.of(), List.of());
    }

    public BackendTraits layout(WeightFormat weights, String name) {
        Map<WeightFormat, String> m = new EnumMap<>(WeightFormat.class);
        m.putAll(layouts);
        m.put(weights, name);
        return new BackendTraits(layout, m, alignment, alignments, activationVariants);
    }

    /** Round-up for every weight format without its own. */
    public BackendTraits align(int hiddenMultiple, int intermediateMultiple) {
        return new BackendTraits(layout, layouts, new Alignment(hiddenMultiple, intermediateMultiple), alignments,
                activationVariants);
    }

    public BackendTraits align(WeightFormat weights, int hiddenMultiple, int intermediateMultiple) {
        Map<WeightFormat, Alignment> m = new EnumMap<>(WeightFormat.class);
        m.putAll(alignments);
        m.put(weights, new Alignment(hiddenMultiple, intermediateMultiple));
        return new BackendTraits(layout, layouts, alignment, m, activationVariants);
    }

    /**
     * Variants for every dynamic activation format moe4j has, on any weights: for backends that quantize-dequantize
     * activations themselves, as the reference does, so a weight-only layer runs with any of them (not MXFP8: there is
     * no {@code ActivationFormat.MXFP8} yet; not NVFP4: it needs a checkpoint's input global scale).
     */
    public BackendTraits anyDynamicActivation() {
        BackendTraits t = this;
        for (ActivationKey a : List.of(ActivationKey.FP8, ActivationKey.INT8, ActivationKey.MXFP4,
                ActivationKey.MXFP6_E3M2, ActivationKey.MXFP6_E2M3)) {
            t = t.variant(ActivationVariant.anyWeights(a));
        }
        return t;
    }

    public BackendTraits variant(ActivationVariant v) {
        List<ActivationVariant> l = new ArrayList<>(activationVariants);
        l.add(v);
        return new BackendTraits(layout, layouts, alignment, alignments, l);
    }

    /** The layout name this backend's kernels take weights of this format in. */
    public String layoutFor(WeightFormat weights) {
        return layouts.getOrDefault(weights, layout);
    }

    public Alignment alignmentFor(WeightFormat weights) {
        return alignments.getOrDefault(weights, alignment);
    }

    /** The hidden and intermediate sizes the backend's kernels work on for this problem (rounded up). */
    public PaddedSizes padded(MoeProblem problem) {
        Alignment a = alignmentFor(problem.scheme().weights());
        return new PaddedSizes(problem.hidden(), problem.intermediate(), roundUp(problem.hidden(), a.hidden()),
                roundUp(problem.intermediate(), a.intermediate()));
    }

    /** The variant that runs {@code weights} with {@code activation}, or null. */
    public ActivationVariant variantFor(WeightFormat weights, ActivationKey activation) {
        for (ActivationVariant v : activationVariants) {
            if (v.activation() == activation && v.weights().contains(weights)) {
                return v;
            }
        }
        return null;
    }

    /** The activation keys offered for weight-only layers of this format (float first). */
    public List<ActivationKey> activationsFor(WeightFormat weights) {
        List<ActivationKey> out = new ArrayList<>(List.of(ActivationKey.BF16));
        for (ActivationVariant v : activationVariants) {
            if (v.weights().contains(weights) && !out.contains(v.activation())) {
                out.add(v.activation());
            }
        }
        return out;
    }

    static int roundUp(int value, int multiple) {
        return multiple <= 1 ? value : Math.ceilDiv(value, multiple) * multiple;
    }

    /** Sizes the kernels want H and I to be multiples of (1: any). */
    public record Alignment(int hidden, int intermediate) {
        public static final Alignment NONE = new Alignment(1, 1);

        public Alignment {
            if (hidden < 1 || intermediate < 1) {
                throw new IllegalArgumentException("alignment must be at least 1, got " + hidden + ", " + intermediate);
            }
        }
    }

    /** The layer's sizes as the checkpoint has them and as the backend's kernels want them. */
    public record PaddedSizes(int hidden, int intermediate, int paddedHidden, int paddedIntermediate) {
        public boolean padded() {
            return paddedHidden != hidden || paddedIntermediate != intermediate;
        }

        @Override
        public String toString() {
            return padded()
                    ? "H " + hidden + "→" + paddedHidden + ", I " + intermediate + "→" + paddedIntermediate
                    : "H " + hidden + ", I " + intermediate + " (no padding)";
        }
    }

    /**
     * A weight-only layer run with quantized activations (e.g. MXFP4 weights with MXFP8 activations).
     *
     * @param weights               the weight formats it applies to
     * @param minComputeCapability  the CUDA compute capability it needs (e.g. 100 for Blackwell), 0 for none
     */
    public record ActivationVariant(Set<WeightFormat> weights, ActivationKey activation, int minComputeCapability) {
        public ActivationVariant {
            weights = Set.copyOf(weights);
        }

        public static ActivationVariant of(ActivationKey activation, WeightFormat first, WeightFormat... more) {
            return new ActivationVariant(EnumSet.of(first, more), activation, 0);
        }

        /** Every weight format. */
        public static ActivationVariant anyWeights(ActivationKey activation) {
            return new ActivationVariant(EnumSet.allOf(WeightFormat.class), activation, 0);
        }

        public ActivationVariant needsComputeCapability(int cc) {
            return new ActivationVariant(weights, activation, cc);
        }

        /** Whether this platform can run the variant. */
        public Support check(WeightFormat w, Platform platform) {
            if (minComputeCapability > 0) {
                int cc = platform.cuda().computeCapability();
                if (!platform.cuda().available() || cc < minComputeCapability) {
                    return Support.no(activation + " activations with " + w + " weights need compute capability "
                            + ccLabel(minComputeCapability) + "+ (" + (platform.cuda().available()
                            ? platform.cuda().deviceName() + " is " + ccLabel(cc) : "no CUDA device") + ")");
                }
            }
            return Support.yes(activation + " activations");
        }
    }

    static String ccLabel(int cc) {
        return (cc / 10) + "." + (cc % 10);
    }
}

package io.moe4j.backend.cpu;

import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.backend.BackendTraits;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.Router;
import io.moe4j.routing.TokenRouter;

import java.util.Optional;

/**
 * The CPU backend: every scheme's experts on packed weights, with fused dequantize-and-multiply kernels on the Java
 * Vector API, or in plain Java where the Vector API is missing or {@code -Dmoe4j.cpu.scalar=true} asks for it.
 */
public final class CpuBackend implements Backend, BackendTraits.Provider {
    public static final String NAME = "cpu";
    /**
     * Forces the kernel activations of every cpu layer ({@code float} or {@code int8}), as {@value
     * KernelSelection#PROPERTY} forces the kernel set; named in the oracle's reason when it decides.
     */
    static final String ACTIVATIONS_PROPERTY = "moe4j.cpu.activations";

    /**
     * Like the reference, the experts apply whatever activation quantize-dequantize the weights carry (a13, a2),
     * so a weight-only layer can run with any dynamic activation format moe4j has.
     */
    private static final BackendTraits TRAITS = BackendTraits.withLayout(
                    "row panels of one vector's lanes (16 on AVX-512, else 8) with lane-interleaved codes, per-panel scales (repacked once at prepare)")
            .anyDynamicActivation();

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "Java Vector API kernels on packed weights (scalar Java where the Vector API is missing), multi-threaded";
    }

    @Override
    public BackendTraits traits() {
        return TRAITS;
    }

    @Override
    public Support support(MoeProblem problem, Platform platform) {
        WeightFormat wf = problem.scheme().weights();
        int bits = platform.vectorApi() ? platform.vectorBitSize() : 0;
        Optional<String> noVector = KernelSelection.vectorUnavailable(bits);
        if (activations(problem.kernelActivations()) == KernelActivations.INT8) {
            String property = forcedActivations() ? " (-D" + ACTIVATIONS_PROPERTY + "=int8)" : "";
            Optional<String> no = Int8Support.refusal(problem.scheme(), noVector);
            if (no.isPresent()) {
                return Support.no(no.get() + property);
            }
            int kernelBits = VectorWidth.choose(System.getProperty(VectorWidth.PROPERTY), bits);
            return Support.yes(Int8Support.reason(wf, kernelBits,
                    (VectorWidth.forced() ? ", -D" + VectorWidth.PROPERTY + "=" + kernelBits : "")
                            + (forcedActivations() ? ", -D" + ACTIVATIONS_PROPERTY + "=int8" : "")));
        }
        if (KernelSelection.scalarForced()) {
            return Support.yes("scalar fused dequant-GEMV for " + wf + " in plain Java: -D"
                    + KernelSelection.PROPERTY + "=true");
        }
        if (noVector.isEmpty()) {
            // The width the kernels run at on this platform (VectorWidth), which need not be its preferred width.
            int kernelBits = VectorWidth.choose(System.getProperty(VectorWidth.PROPERTY), bits);
            String forced = VectorWidth.forced() ? ", -D" + VectorWidth.PROPERTY + "=" + kernelBits : "";
            return Support.yes("vectorized fused dequant-GEMV for " + wf + " on " + kernelBits
                    + "-bit vectors (Java Vector API" + forced + ")");
        }
        if ("false".equalsIgnoreCase(System.getProperty(KernelSelection.PROPERTY, "").trim())) {
            return Support.no("-D" + KernelSelection.PROPERTY + "=false forces the Vector API kernels, but "
                    + noVector.get());
        }
        return Support.yes("scalar fused dequant-GEMV for " + wf + " in plain Java: "
                + noVector.get());
    }

    @Override
    public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
        CpuKernels kernels = KernelSelection.select();
        if (activations(options.activations()) == KernelActivations.INT8) {
            Platform p = io.moe4j.backend.PlatformProbe.probeReal();
            Int8Support.check(weights, KernelSelection.vectorUnavailable(p.vectorApi() ? p.vectorBitSize() : 0));
            kernels = KernelSelection.int8(kernels);
        }
        return new CpuExperts(weights, kernels, options.threads(), options.workers());
    }

    /** The kernel activations asked, unless {@value #ACTIVATIONS_PROPERTY} forces them. */
    static KernelActivations activations(KernelActivations asked) {
        String p = System.getProperty(ACTIVATIONS_PROPERTY);
        return p == null || p.isBlank() ? asked : KernelActivations.parse(p, "-D" + ACTIVATIONS_PROPERTY + "=");
    }

    private static boolean forcedActivations() {
        String p = System.getProperty(ACTIVATIONS_PROPERTY);
        return p != null && !p.isBlank();
    }

    /** Int8 kernel activations for the schemes {@link Int8Support} names, float for every scheme. */
    @Override
    public boolean computesWith(KernelActivations k) {
        return true;
    }

    /**
     * The router on the kernels the experts use ({@link CpuRouter}): the same choices as the host router, its logits
     * summed in another order with the Vector API, or in plain Java where the experts run scalar.
     */
    @Override
    public TokenRouter prepareRouter(Router router, ExecutionOptions options) {
        return new CpuRouter(router, KernelSelection.select().routerLogits(router));
    }
}

package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.backend.BackendTraits;
import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.Support;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.activation.Activation;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;

import java.util.List;

/**
 * Stand-ins for the cuda and cpu backends (other packages' work), with support rules in the spirit of vLLM's
 * kernels on Hopper and of a Vector API CPU path, and the platforms the tests pose as.
 */
final class FakeBackends {
    private FakeBackends() {
    }

    static final String NO_DRIVER = "no CUDA driver (libcuda.so.1) found";

    /** A CPU machine with AVX-512 and the Vector API, no GPU. */
    static final Platform CPU = new Platform(16, true, 512, "avx512f avx2 fma", Platform.CudaInfo.none(NO_DRIVER));
    /** The same machine without the Vector API (no --add-modules jdk.incubator.vector). */
    static final Platform CPU_NOVECTOR = new Platform(16, false, 0, "avx512f avx2 fma", Platform.CudaInfo.none(NO_DRIVER));
    /** That CPU posing with an H100. */
    static final Platform H100 = PlatformProbe.pose("h100", CPU);
    static final String H100_NAME = "NVIDIA H100 80GB HBM3 (posed: h100)";
    /** A Blackwell box (no pose exists for it; built by hand). */
    static final Platform B200 = new Platform(16, true, 512, "avx512f avx2 fma",
            new Platform.CudaInfo(true, "", 1, "NVIDIA B200", 100, 191_000_000_000L));

    /** cuda, cpu, emulation registered in reverse priority order, so that the priority list has to order them. */
    static BackendRegistry registry() {
        return new BackendRegistry(List.of(
                new BackendRegistry.Entry(new EmulationBackend(), BackendRegistry.EMULATION_TRAITS),
                BackendRegistry.Entry.of(new FakeCpu()),
                BackendRegistry.Entry.of(new FakeCuda())));
    }

    static Oracle oracle() {
        return new Oracle(registry());
    }

    static QuantScheme scheme(String name, WeightFormat w, ActivationFormat a) {
        return new QuantScheme(name, w, a, false);
    }

    static MoeProblem problem(QuantScheme s, int hidden, int intermediate, int experts, int topK) {
        return new MoeProblem(s, hidden, intermediate, experts, topK, Activation.SILU_AND_MUL, false);
    }

    /** Poses as moe4j's CUDA backend: Marlin/Triton/FlashInfer-like rules on compute capability and formats. */
    static final class FakeCuda implements Backend, BackendTraits.Provider {
        @Override
        public String name() {
            return "cuda";
        }

        @Override
        public String description() {
            return "fake CUDA backend";
        }

        @Override
        public BackendTraits traits() {
            return BackendTraits.withLayout("cuda-tiled")
                    .layout(WeightFormat.MXFP4, "cuda-marlin-mxfp4")
                    .align(1, 64)
                    .align(WeightFormat.MXFP4, 256, 128)
                    .variant(BackendTraits.ActivationVariant.of(ActivationKey.MXFP8, WeightFormat.MXFP4).needsComputeCapability(100))
                    .variant(BackendTraits.ActivationVariant.of(ActivationKey.FP8, WeightFormat.MXFP4).needsComputeCapability(100));
        }

        @Override
        public Support support(MoeProblem p, Platform platform) {
            Platform.CudaInfo cuda = platform.cuda();
            if (!cuda.available()) {
                return Support.no(cuda.reason());
            }
            int cc = cuda.computeCapability();
            String is = " (" + cuda.deviceName() + " is " + (cc / 10) + "." + (cc % 10) + ")";
            WeightFormat w = p.scheme().weights();
            ActivationFormat a = p.scheme().activations();
            if (cc < 80) {
                return Support.no("needs compute capability 8.0+" + is);
            }
            if (w == WeightFormat.F32) {
                return Support.no("no CUDA kernel for F32 expert weights");
            }
            if (w == WeightFormat.MXFP6_E3M2 || w == WeightFormat.MXFP6_E2M3) {
                return Support.no("no CUDA kernel for " + w + " weights");
            }
            if (a == ActivationFormat.MXFP4 || a == ActivationFormat.MXFP6_E3M2 || a == ActivationFormat.MXFP6_E2M3) {
                return Support.no("no CUDA kernel for " + a + " activations");
            }
            if (a == ActivationFormat.NVFP4 && cc < 100) {
                return Support.no("NVFP4 activations need compute capability 10.0+" + is);
            }
            boolean fp8 = w == WeightFormat.FP8_TENSOR || w == WeightFormat.FP8_CHANNEL || w == WeightFormat.FP8_BLOCK
                    || a == ActivationFormat.FP8_STATIC || a == ActivationFormat.FP8_TOKEN || a == ActivationFormat.FP8_GROUP128;
            if (fp8 && cc < 89) {
                return Support.no("FP8 needs compute capability 8.9+" + is);
            }
            if (w == WeightFormat.FP8_BLOCK && (p.hidden() % 128 != 0 || p.intermediate() % 128 != 0)) {
                return Support.no("FP8 block scales need H and I multiples of 128 (H " + p.hidden() + ", I "
                        + p.intermediate() + ")");
            }
            return Support.yes(w + " kernels on " + cuda.deviceName());
        }

        @Override
        public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
            throw new UnsupportedOperationException("fake");
        }
    }

    /** Poses as moe4j's Vector API backend. */
    static final class FakeCpu implements Backend, BackendTraits.Provider {
        @Override
        public String name() {
            return "cpu";
        }

        @Override
        public String description() {
            return "fake Vector API backend";
        }

        @Override
        public BackendTraits traits() {
            return BackendTraits.withLayout("cpu-rowblock").align(32, 32);
        }

        @Override
        public Support support(MoeProblem p, Platform platform) {
            if (!platform.vectorApi()) {
                return Support.no("needs the Vector API (run with --add-modules jdk.incubator.vector)");
            }
            WeightFormat w = p.scheme().weights();
            if (w == WeightFormat.MXFP6_E3M2 || w == WeightFormat.MXFP6_E2M3) {
                return Support.no("no Vector API kernel for " + w + " weights");
            }
            if (p.scheme().activations() == ActivationFormat.NVFP4) {
                return Support.no("no Vector API kernel for NVFP4 activations");
            }
            if (p.expertParallel()) {
                return Support.no("expert parallelism is not supported (all experts must be local)");
            }
            return Support.yes(platform.vectorBitSize() + "-bit Vector API kernels for " + w + " weights");
        }

        @Override
        public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
            throw new UnsupportedOperationException("fake");
        }
    }
}

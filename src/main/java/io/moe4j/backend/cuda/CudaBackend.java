package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;

import io.moe4j.MoeException;
import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaDevice;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.BackendTraits;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.Router;
import io.moe4j.routing.TokenRouter;
import java.lang.foreign.Arena;

/**
 * The whole experts stage on an NVIDIA GPU, through the CUDA driver (FFM) with kernels compiled by NVRTC: weights
 * uploaded once in their checkpoint precision, every activation quantizer with the reference's numerics, and the
 * two grouped GEMMs, activation and weighted combine on the device ({@link CudaExperts}). MXFP4 runs on tensor
 * cores; the other formats on a CUDA-core GEMM that decodes each packed format in registers.
 */
public final class CudaBackend implements Backend, BackendTraits.Provider {
    public static final String NAME = "cuda";

    private final CudaTuning tuning;

    public CudaBackend() {
        this(CudaTuning.fromSystemProperties());
    }

    CudaBackend(CudaTuning tuning) {
        this.tuning = tuning;
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public String description() {
        return "NVIDIA GPU through the CUDA driver (FFM), kernels compiled by NVRTC";
    }

    /**
     * The activation quantizers run as a generic row stage, so a weight-only layer runs with any dynamic activation
     * format moe4j has, like the reference (not MXFP8, which moe4j has no format for; not NVFP4, which needs a
     * checkpoint's input scale).
     */
    @Override
    public BackendTraits traits() {
        return BackendTraits.withLayout("cuda: MXFP4 in tensor-core fragment order; other formats as checkpoint rows "
                        + "padded to 32-element units")
                .anyDynamicActivation();
    }

    @Override
    public Support support(MoeProblem problem, Platform platform) {
        if (problem.splitActOrder()) {
            return Support.no(UnitMatrix.SPLIT_ACT_ORDER);
        }
        if (!platform.cuda().available()) {
            return Support.no(platform.cuda().reason());
        }
        // The platform's answer is this probe's (PlatformProbe asks it) unless the platform is posed
        // (moe4j.platform); then the device the kernels would run on must still be here.
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            return Support.no(probe.reason());
        }
        CudaDevice device = probe.device().orElseThrow();
        return support(problem.scheme().weights(), device.computeCapability(), device.name());
    }

    /** The answer for a weight format on a device of compute capability {@code cc} (e.g. 90). */
    static Support support(WeightFormat weights, int cc, String deviceName) {
        if (cc < 80) {
            return Support.no("the CUDA kernels need compute capability 8.0+ (mma.sync f16, cp.async); " + deviceName
                    + " is " + cc / 10 + "." + cc % 10);
        }
        boolean fp8 = weights == WeightFormat.FP8_TENSOR || weights == WeightFormat.FP8_CHANNEL
                || weights == WeightFormat.FP8_BLOCK;
        if ((fp8 || weights == WeightFormat.NVFP4) && cc < 89) {
            return Support.no(weights + " weights need compute capability 8.9+ (hardware E4M3 conversion); "
                    + deviceName + " is " + cc / 10 + "." + cc % 10);
        }
        return Support.yes(kernelFor(weights) + " on " + deviceName);
    }

    static String kernelFor(WeightFormat weights) {
        return switch (weights) {
            case MXFP4 -> "MXFP4 on tensor cores (mma.sync GEMV for decode, tile GEMM for prefill)";
            case MXFP6_E3M2, MXFP6_E2M3 -> weights + " CUDA-core grouped GEMM on packed 6-bit codes";
            case NVFP4 -> "NVFP4 CUDA-core grouped GEMM on packed E2M1 codes with E4M3 scales per 16";
            case FP8_TENSOR, FP8_CHANNEL, FP8_BLOCK -> weights + " CUDA-core grouped GEMM on packed E4M3 codes";
            case INT8_TENSOR, INT8_CHANNEL, INT8_GROUP -> weights + " CUDA-core grouped GEMM on packed INT8 codes";
            case INT4_CHANNEL, INT4_GROUP -> weights + " CUDA-core grouped GEMM on packed INT4 codes";
            case BF16, F16, F32 -> weights + " CUDA-core grouped GEMM";
        };
    }

    @Override
    public Experts prepare(ExpertWeights weights, ExecutionOptions options) {
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            throw new MoeException("backend cuda cannot run here: " + probe.reason());
        }
        for (ExpertMatrix m : new ExpertMatrix[] {weights.w13(), weights.w2()}) {
            String reason = Mxfp4Matrix.fits(m) ? null : UnitMatrix.unsupportedReason(m);
            if (reason != null) {
                throw new MoeException("backend cuda cannot run " + weights.scheme() + ": " + reason);
            }
        }
        CudaEngine engine = CudaEngine.forDevice(options.device());
        CudaContext ctx = engine.context();
        DeviceMatrix w13 = null;
        DeviceMatrix w2 = null;
        DeviceBuffer b13 = null;
        DeviceBuffer b2 = null;
        DeviceQuant a13 = null;
        try {
            w13 = upload(engine, weights.w13());
            w2 = upload(engine, weights.w2());
            b13 = floats(ctx, weights.w13Bias());
            b2 = floats(ctx, weights.w2Bias());
            a13 = DeviceQuant.upload(ctx, weights.a13());
            DeviceQuant a2 = DeviceQuant.upload(ctx, weights.a2());
            return new CudaExperts(weights, engine, tuning, w13, w2, b13, b2, a13, a2);
        } catch (RuntimeException e) {
            for (AutoCloseable c : new AutoCloseable[] {w13, w2, b13, b2, a13}) {
                if (c != null) {
                    try {
                        c.close();
                    } catch (Exception suppressed) {
                        e.addSuppressed(suppressed);
                    }
                }
            }
            throw e;
        }
    }

    /**
     * The router on the device ({@link CudaRouter}) where its kernels take it; a router beyond their limits (over
     * 512 experts, top-k over 32), or any router with {@code -Dmoe4j.cuda.router=host}, stays on the host, and the
     * log says so. On the experts' device ({@code options.device()}).
     */
    @Override
    public TokenRouter prepareRouter(Router router, ExecutionOptions options) {
        CudaProbe probe = CudaRuntime.probe();
        if (!probe.available()) {
            throw new MoeException("backend cuda cannot run here: " + probe.reason());
        }
        String where = System.getProperty(ROUTER_PROPERTY, "device");
        if (!where.equals("device") && !where.equals("host")) {
            throw new MoeException("-D" + ROUTER_PROPERTY + "=" + where + ": expected device or host");
        }
        String reason = where.equals("host") ? "-D" + ROUTER_PROPERTY + "=host"
                : CudaRouter.unsupportedReason(router.spec());
        if (reason != null) {
            System.getLogger(CudaBackend.class.getName()).log(System.Logger.Level.INFO,
                    "routing on the host: " + reason);
            return router;
        }
        return CudaRouter.upload(CudaEngine.forDevice(options.device()), router, tuning.mappedTransfers());
    }

    /** Where the cuda backend routes tokens: {@code device} (default) or {@code host}. */
    static final String ROUTER_PROPERTY = "moe4j.cuda.router";

    private static DeviceMatrix upload(CudaEngine engine, ExpertMatrix m) {
        boolean tensorCores = engine.context().device().major() >= 8;
        return tensorCores && Mxfp4Matrix.fits(m) ? Mxfp4Matrix.upload(engine.context(), engine.mxfp4(), m)
                : UnitMatrix.upload(engine.context(), m);
    }

    /** A float array on the device (at least one element, so that an empty array still has an address), or null. */
    static DeviceBuffer floats(CudaContext ctx, float[] v) {
        if (v == null) {
            return null;
        }
        DeviceBuffer b = ctx.allocate(4L * Math.max(1, v.length));
        try (Arena a = Arena.ofConfined()) {
            b.copyFrom(a.allocateFrom(JAVA_FLOAT, v));
        }
        return b;
    }
}

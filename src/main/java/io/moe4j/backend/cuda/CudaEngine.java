package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaRuntime;

/**
 * What every prepared layer on the device shares: the primary context of device 0, the kernel compiler and the
 * loaded kernels. One per process, opened on first use and kept for the process's life (the primary context is
 * the driver's shared one; the loaded modules are small), so that a model's layers compile each kernel once.
 */
final class CudaEngine {
    private static volatile CudaEngine shared;

    private final CudaContext context;
    private final KernelCache kernels;
    private final Mxfp4Gemv mxfp4;

    private CudaEngine(CudaContext context) {
        this.context = context;
        KernelCompiler compiler = KernelCompiler.forDevice(context.device());
        this.kernels = new KernelCache(context, compiler);
        this.mxfp4 = Mxfp4Gemv.create(context, compiler, GemvTuning.fromSystemProperties());
    }

    /** The process's engine; opens device 0 the first time (the caller checked {@link CudaRuntime#probe()}). */
    static CudaEngine shared() {
        CudaEngine e = shared;
        if (e == null) {
            synchronized (CudaEngine.class) {
                e = shared;
                if (e == null) {
                    e = new CudaEngine(CudaRuntime.open(0));
                    shared = e;
                }
            }
        }
        e.context.makeCurrent();
        return e;
    }

    CudaContext context() {
        return context;
    }

    KernelCache kernels() {
        return kernels;
    }

    /** The MXFP4 tensor-core GEMV and its upload (fragment-order repack). */
    Mxfp4Gemv mxfp4() {
        return mxfp4;
    }
}

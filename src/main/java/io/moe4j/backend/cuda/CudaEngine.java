package io.moe4j.backend.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaRuntime;

import java.util.concurrent.ConcurrentHashMap;

/**
 * What every prepared layer on a device shares: the primary context of that device, the kernel compiler and the
 * loaded kernels. One per device and process, opened on first use and kept for the process's life (the primary
 * context is the driver's shared one; the loaded modules are small), so that a model's layers compile each kernel
 * once. Device 0 unless a layer is placed elsewhere (expert parallelism: a slice of the experts per device).
 */
final class CudaEngine {
    private static final ConcurrentHashMap<Integer, CudaEngine> ENGINES = new ConcurrentHashMap<>();

    private final CudaContext context;
    private final KernelCache kernels;
    private final Mxfp4Gemv mxfp4;

    private CudaEngine(CudaContext context) {
        this.context = context;
        KernelCompiler compiler = KernelCompiler.forDevice(context.device());
        this.kernels = new KernelCache(context, compiler);
        this.mxfp4 = Mxfp4Gemv.create(context, compiler, GemvTuning.fromSystemProperties());
    }

    /** Device 0's engine; opens the device the first time (the caller checked {@link CudaRuntime#probe()}). */
    static CudaEngine shared() {
        return forDevice(0);
    }

    /**
     * Device {@code ordinal}'s engine, its context made current on this thread; opens the device the first time.
     *
     * @throws MoeException when this machine has no such device, naming how many it has
     */
    static CudaEngine forDevice(int ordinal) {
        CudaEngine e = ENGINES.get(ordinal);
        if (e == null) {
            int count = CudaRuntime.probe().deviceCount();
            if (ordinal < 0 || ordinal >= count) {
                throw new MoeException("no CUDA device " + ordinal + ": this machine has " + count
                        + (count == 1 ? " device" : " devices") + " (ordinals 0 to " + (count - 1) + ")");
            }
            e = ENGINES.computeIfAbsent(ordinal, o -> new CudaEngine(CudaRuntime.open(o)));
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

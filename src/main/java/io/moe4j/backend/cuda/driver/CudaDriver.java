package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.MemorySegment;
import java.lang.invoke.MethodHandle;

/**
 * The CUDA driver API ({@code libcuda.so.1}) as typed Java methods: one downcall handle per function, each wrapper
 * returning the raw CUresult. Callers that want an exception use {@link #check}. Handles are bound to the exported
 * ABI names ({@code _v2} where the header maps the plain name to it), so the binding does not depend on cuda.h.
 *
 * <p>Pointers to CUDA objects (CUcontext, CUmodule, CUfunction, CUstream, CUevent, CUgraph) travel as
 * {@link MemorySegment} addresses; device pointers (CUdeviceptr, an unsigned 64-bit integer) as {@code long}.
 */
public final class CudaDriver {
    /** CUdevice_attribute values used here (cuda.h enum values; stable across releases). */
    public static final int ATTR_MAX_THREADS_PER_BLOCK = 1;
    public static final int ATTR_MULTIPROCESSOR_COUNT = 16;
    public static final int ATTR_L2_CACHE_SIZE = 38;
    public static final int ATTR_COMPUTE_CAPABILITY_MAJOR = 75;
    public static final int ATTR_COMPUTE_CAPABILITY_MINOR = 76;
    public static final int ATTR_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
    /** CUfunction_attribute values. */
    public static final int FUNC_MAX_THREADS_PER_BLOCK = 0;
    public static final int FUNC_SHARED_SIZE_BYTES = 1;
    public static final int FUNC_LOCAL_SIZE_BYTES = 3;
    public static final int FUNC_NUM_REGS = 4;
    public static final int FUNC_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;

    private static final FunctionDescriptor I_I = FunctionDescriptor.of(JAVA_INT, JAVA_INT);
    private static final FunctionDescriptor I_A = FunctionDescriptor.of(JAVA_INT, ADDRESS);
    private static final FunctionDescriptor I_V = FunctionDescriptor.of(JAVA_INT);
    private static final FunctionDescriptor I_L = FunctionDescriptor.of(JAVA_INT, JAVA_LONG);

    private final String library;
    private final MethodHandle cuGetErrorName;
    private final MethodHandle cuGetErrorString;
    private final MethodHandle cuInit;
    private final MethodHandle cuDriverGetVersion;
    private final MethodHandle cuDeviceGetCount;
    private final MethodHandle cuDeviceGet;
    private final MethodHandle cuDeviceGetName;
    private final MethodHandle cuDeviceTotalMem;
    private final MethodHandle cuDeviceGetAttribute;
    private final MethodHandle cuDevicePrimaryCtxRetain;
    private final MethodHandle cuDevicePrimaryCtxRelease;
    private final MethodHandle cuCtxSetCurrent;
    private final MethodHandle cuCtxSynchronize;
    private final MethodHandle cuProfilerStart;
    private final MethodHandle cuProfilerStop;
    private final MethodHandle cuMemGetInfo;
    private final MethodHandle cuModuleLoadData;
    private final MethodHandle cuModuleUnload;
    private final MethodHandle cuModuleGetFunction;
    private final MethodHandle cuFuncGetAttribute;
    private final MethodHandle cuFuncSetAttribute;
    private final MethodHandle cuOccupancyMaxActiveBlocksPerMultiprocessor;
    private final MethodHandle cuMemAlloc;
    private final MethodHandle cuMemFree;
    private final MethodHandle cuMemHostAlloc;
    private final MethodHandle cuMemFreeHost;
    private final MethodHandle cuMemcpyHtoD;
    private final MethodHandle cuMemcpyDtoH;
    private final MethodHandle cuMemcpyDtoD;
    private final MethodHandle cuMemcpyHtoDAsync;
    private final MethodHandle cuMemcpyDtoHAsync;
    private final MethodHandle cuMemcpyDtoDAsync;
    private final MethodHandle cuMemcpy2D;
    private final MethodHandle cuMemsetD8;
    private final MethodHandle cuMemsetD8Async;
    private final MethodHandle cuMemsetD32;
    private final MethodHandle cuLaunchKernel;
    private final MethodHandle cuLaunchKernelEx;
    private final MethodHandle cuStreamCreate;
    private final MethodHandle cuStreamDestroy;
    private final MethodHandle cuStreamSynchronize;
    private final MethodHandle cuEventCreate;
    private final MethodHandle cuEventDestroy;
    private final MethodHandle cuEventRecord;
    private final MethodHandle cuEventSynchronize;
    private final MethodHandle cuEventElapsedTime;
    private final MethodHandle cuStreamBeginCapture;
    private final MethodHandle cuStreamEndCapture;
    private final MethodHandle cuGraphInstantiate;
    private final MethodHandle cuGraphLaunch;
    private final MethodHandle cuGraphExecDestroy;
    private final MethodHandle cuGraphDestroy;

    private CudaDriver(NativeLibrary lib) {
        library = lib.name();
        cuGetErrorName = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), "cuGetErrorName");
        cuGetErrorString = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_INT, ADDRESS), "cuGetErrorString");
        cuInit = lib.function(I_I, "cuInit");
        cuDriverGetVersion = lib.function(I_A, "cuDriverGetVersion");
        cuDeviceGetCount = lib.function(I_A, "cuDeviceGetCount");
        cuDeviceGet = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceGet");
        cuDeviceGetName = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT), "cuDeviceGetName");
        cuDeviceTotalMem = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuDeviceTotalMem_v2");
        cuDeviceGetAttribute = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                "cuDeviceGetAttribute");
        cuDevicePrimaryCtxRetain = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                "cuDevicePrimaryCtxRetain");
        cuDevicePrimaryCtxRelease = lib.function(I_I, "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxRelease");
        cuCtxSetCurrent = lib.function(I_A, "cuCtxSetCurrent");
        cuCtxSynchronize = lib.function(I_V, "cuCtxSynchronize");
        cuProfilerStart = lib.function(I_V, "cuProfilerStart");
        cuProfilerStop = lib.function(I_V, "cuProfilerStop");
        cuMemGetInfo = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuMemGetInfo_v2");
        cuModuleLoadData = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuModuleLoadData");
        cuModuleUnload = lib.function(I_A, "cuModuleUnload");
        cuModuleGetFunction = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
                "cuModuleGetFunction");
        cuFuncGetAttribute = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, ADDRESS),
                "cuFuncGetAttribute");
        cuFuncSetAttribute = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT),
                "cuFuncSetAttribute");
        cuOccupancyMaxActiveBlocksPerMultiprocessor = lib.function(
                FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_INT, JAVA_LONG),
                "cuOccupancyMaxActiveBlocksPerMultiprocessor");
        cuMemAlloc = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG), "cuMemAlloc_v2");
        cuMemFree = lib.function(I_L, "cuMemFree_v2");
        cuMemHostAlloc = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_INT), "cuMemHostAlloc");
        cuMemFreeHost = lib.function(I_A, "cuMemFreeHost");
        cuMemcpyHtoD = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG), "cuMemcpyHtoD_v2");
        cuMemcpyDtoH = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG), "cuMemcpyDtoH_v2");
        cuMemcpyDtoD = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG),
                "cuMemcpyDtoD_v2");
        cuMemcpyHtoDAsync = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, ADDRESS, JAVA_LONG, ADDRESS),
                "cuMemcpyHtoDAsync_v2");
        cuMemcpyDtoHAsync = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_LONG, JAVA_LONG, ADDRESS),
                "cuMemcpyDtoHAsync_v2");
        cuMemcpyDtoDAsync = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_LONG, JAVA_LONG, ADDRESS),
                "cuMemcpyDtoDAsync_v2");
        cuMemcpy2D = lib.function(I_A, "cuMemcpy2D_v2");
        cuMemsetD8 = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG), "cuMemsetD8_v2");
        cuMemsetD8Async = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_BYTE, JAVA_LONG, ADDRESS),
                "cuMemsetD8Async");
        cuMemsetD32 = lib.function(FunctionDescriptor.of(JAVA_INT, JAVA_LONG, JAVA_INT, JAVA_LONG), "cuMemsetD32_v2");
        cuLaunchKernel = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT, JAVA_INT, JAVA_INT, JAVA_INT,
                JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS), "cuLaunchKernel");
        // CUDA 12.0+: only overlapped launches need it, so an older driver keeps the rest of the binding.
        cuLaunchKernelEx = lib.optionalFunction(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS, ADDRESS),
                "cuLaunchKernelEx");
        cuStreamCreate = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuStreamCreate");
        cuStreamDestroy = lib.function(I_A, "cuStreamDestroy_v2");
        cuStreamSynchronize = lib.function(I_A, "cuStreamSynchronize");
        cuEventCreate = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT), "cuEventCreate");
        cuEventDestroy = lib.function(I_A, "cuEventDestroy_v2");
        cuEventRecord = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuEventRecord");
        cuEventSynchronize = lib.function(I_A, "cuEventSynchronize");
        // CUDA 12.8 added a _v2 that cuda.h 13 maps the plain name to; older drivers export only the plain one.
        cuEventElapsedTime = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, ADDRESS),
                "cuEventElapsedTime_v2", "cuEventElapsedTime");
        cuStreamBeginCapture = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, JAVA_INT),
                "cuStreamBeginCapture_v2");
        cuStreamEndCapture = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuStreamEndCapture");
        cuGraphInstantiate = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS, JAVA_LONG),
                "cuGraphInstantiateWithFlags");
        cuGraphLaunch = lib.function(FunctionDescriptor.of(JAVA_INT, ADDRESS, ADDRESS), "cuGraphLaunch");
        cuGraphExecDestroy = lib.function(I_A, "cuGraphExecDestroy");
        cuGraphDestroy = lib.function(I_A, "cuGraphDestroy");
    }

    private static volatile CudaDriver instance;

    /**
     * The process-wide driver binding, loading {@code libcuda.so.1} on first use. Throws {@link CudaException} when
     * the library cannot be loaded; {@link CudaRuntime#probe()} is the non-throwing way to ask.
     */
    public static CudaDriver get() {
        CudaDriver d = instance;
        if (d == null) {
            synchronized (CudaDriver.class) {
                d = instance;
                if (d == null) {
                    d = load(NativeLibrary.bySoname("libcuda.so.1"));
                    instance = d;
                }
            }
        }
        return d;
    }

    static CudaDriver load(NativeLibrary lib) {
        return new CudaDriver(lib);
    }

    public String library() {
        return library;
    }

    /** Throws a {@link CudaException} naming {@code call} and the error when {@code result} is not CUDA_SUCCESS. */
    public void check(String call, int result) {
        if (result != 0) {
            throw new CudaException(call, result, call + " failed: " + describe(result));
        }
    }

    /** "CUDA_ERROR_NAME (description)" for a CUresult, from the driver itself. */
    public String describe(int result) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            String name = (int) cuGetErrorName.invokeExact(result, out) == 0 ? cString(out) : "CUresult " + result;
            String text = (int) cuGetErrorString.invokeExact(result, out) == 0 ? cString(out) : "unknown error";
            return name + " (" + text + ")";
        } catch (Throwable t) {
            return "CUresult " + result;
        }
    }

    private static String cString(MemorySegment pointerHolder) {
        MemorySegment p = pointerHolder.get(ADDRESS, 0);
        return p.equals(MemorySegment.NULL) ? "" : p.reinterpret(4096).getString(0);
    }

    // ---- raw calls: each returns the CUresult --------------------------------------------------------------------

    public int cuInit(int flags) {
        try { return (int) cuInit.invokeExact(flags); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDriverGetVersion(MemorySegment version) {
        try { return (int) cuDriverGetVersion.invokeExact(version); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDeviceGetCount(MemorySegment count) {
        try { return (int) cuDeviceGetCount.invokeExact(count); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDeviceGet(MemorySegment device, int ordinal) {
        try { return (int) cuDeviceGet.invokeExact(device, ordinal); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDeviceGetName(MemorySegment name, int length, int device) {
        try { return (int) cuDeviceGetName.invokeExact(name, length, device); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDeviceTotalMem(MemorySegment bytes, int device) {
        try { return (int) cuDeviceTotalMem.invokeExact(bytes, device); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDeviceGetAttribute(MemorySegment value, int attribute, int device) {
        try { return (int) cuDeviceGetAttribute.invokeExact(value, attribute, device); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDevicePrimaryCtxRetain(MemorySegment context, int device) {
        try { return (int) cuDevicePrimaryCtxRetain.invokeExact(context, device); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuDevicePrimaryCtxRelease(int device) {
        try { return (int) cuDevicePrimaryCtxRelease.invokeExact(device); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuCtxSetCurrent(MemorySegment context) {
        try { return (int) cuCtxSetCurrent.invokeExact(context); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuCtxSynchronize() {
        try { return (int) cuCtxSynchronize.invokeExact(); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    /** Starts collection of an attached profiler (Nsight's --profile-from-start off); a no-op without one. */
    public int cuProfilerStart() {
        try { return (int) cuProfilerStart.invokeExact(); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuProfilerStop() {
        try { return (int) cuProfilerStop.invokeExact(); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemGetInfo(MemorySegment free, MemorySegment total) {
        try { return (int) cuMemGetInfo.invokeExact(free, total); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuModuleLoadData(MemorySegment module, MemorySegment image) {
        try { return (int) cuModuleLoadData.invokeExact(module, image); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuModuleUnload(MemorySegment module) {
        try { return (int) cuModuleUnload.invokeExact(module); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuModuleGetFunction(MemorySegment function, MemorySegment module, MemorySegment name) {
        try { return (int) cuModuleGetFunction.invokeExact(function, module, name); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuFuncGetAttribute(MemorySegment value, int attribute, MemorySegment function) {
        try { return (int) cuFuncGetAttribute.invokeExact(value, attribute, function); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuFuncSetAttribute(MemorySegment function, int attribute, int value) {
        try { return (int) cuFuncSetAttribute.invokeExact(function, attribute, value); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuOccupancyMaxActiveBlocksPerMultiprocessor(MemorySegment blocks, MemorySegment function, int blockSize,
            long dynamicSharedBytes) {
        try {
            return (int) cuOccupancyMaxActiveBlocksPerMultiprocessor.invokeExact(blocks, function, blockSize,
                    dynamicSharedBytes);
        } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemAlloc(MemorySegment devicePointer, long bytes) {
        try { return (int) cuMemAlloc.invokeExact(devicePointer, bytes); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemFree(long devicePointer) {
        try { return (int) cuMemFree.invokeExact(devicePointer); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemHostAlloc(MemorySegment pointer, long bytes, int flags) {
        try { return (int) cuMemHostAlloc.invokeExact(pointer, bytes, flags); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemFreeHost(MemorySegment pointer) {
        try { return (int) cuMemFreeHost.invokeExact(pointer); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyHtoD(long dst, MemorySegment src, long bytes) {
        try { return (int) cuMemcpyHtoD.invokeExact(dst, src, bytes); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyDtoH(MemorySegment dst, long src, long bytes) {
        try { return (int) cuMemcpyDtoH.invokeExact(dst, src, bytes); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyDtoD(long dst, long src, long bytes) {
        try { return (int) cuMemcpyDtoD.invokeExact(dst, src, bytes); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyHtoDAsync(long dst, MemorySegment src, long bytes, MemorySegment stream) {
        try { return (int) cuMemcpyHtoDAsync.invokeExact(dst, src, bytes, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyDtoHAsync(MemorySegment dst, long src, long bytes, MemorySegment stream) {
        try { return (int) cuMemcpyDtoHAsync.invokeExact(dst, src, bytes, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpyDtoDAsync(long dst, long src, long bytes, MemorySegment stream) {
        try { return (int) cuMemcpyDtoDAsync.invokeExact(dst, src, bytes, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemcpy2D(MemorySegment copyDescriptor) {
        try { return (int) cuMemcpy2D.invokeExact(copyDescriptor); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemsetD8Async(long dst, byte value, long count, MemorySegment stream) {
        try { return (int) cuMemsetD8Async.invokeExact(dst, value, count, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemsetD8(long dst, byte value, long count) {
        try { return (int) cuMemsetD8.invokeExact(dst, value, count); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuMemsetD32(long dst, int value, long count) {
        try { return (int) cuMemsetD32.invokeExact(dst, value, count); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuLaunchKernel(MemorySegment function, int gridX, int gridY, int gridZ, int blockX, int blockY,
            int blockZ, int sharedBytes, MemorySegment stream, MemorySegment params, MemorySegment extra) {
        try {
            return (int) cuLaunchKernel.invokeExact(function, gridX, gridY, gridZ, blockX, blockY, blockZ, sharedBytes,
                    stream, params, extra);
        } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    /** Whether this driver has cuLaunchKernelEx (CUDA 12.0 and later), which overlapped launches go through. */
    public boolean hasLaunchKernelEx() {
        return cuLaunchKernelEx != null;
    }

    /** {@code config} is a CUlaunchConfig (see {@link CudaFunction#launch}); see {@link #hasLaunchKernelEx()}. */
    public int cuLaunchKernelEx(MemorySegment config, MemorySegment function, MemorySegment params,
            MemorySegment extra) {
        try {
            return (int) cuLaunchKernelEx.invokeExact(config, function, params, extra);
        } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuStreamCreate(MemorySegment stream, int flags) {
        try { return (int) cuStreamCreate.invokeExact(stream, flags); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuStreamDestroy(MemorySegment stream) {
        try { return (int) cuStreamDestroy.invokeExact(stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuStreamSynchronize(MemorySegment stream) {
        try { return (int) cuStreamSynchronize.invokeExact(stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuEventCreate(MemorySegment event, int flags) {
        try { return (int) cuEventCreate.invokeExact(event, flags); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuEventDestroy(MemorySegment event) {
        try { return (int) cuEventDestroy.invokeExact(event); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuEventRecord(MemorySegment event, MemorySegment stream) {
        try { return (int) cuEventRecord.invokeExact(event, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuEventSynchronize(MemorySegment event) {
        try { return (int) cuEventSynchronize.invokeExact(event); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuEventElapsedTime(MemorySegment millis, MemorySegment start, MemorySegment end) {
        try { return (int) cuEventElapsedTime.invokeExact(millis, start, end); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuStreamBeginCapture(MemorySegment stream, int mode) {
        try { return (int) cuStreamBeginCapture.invokeExact(stream, mode); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuStreamEndCapture(MemorySegment stream, MemorySegment graph) {
        try { return (int) cuStreamEndCapture.invokeExact(stream, graph); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuGraphInstantiate(MemorySegment graphExec, MemorySegment graph, long flags) {
        try { return (int) cuGraphInstantiate.invokeExact(graphExec, graph, flags); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuGraphLaunch(MemorySegment graphExec, MemorySegment stream) {
        try { return (int) cuGraphLaunch.invokeExact(graphExec, stream); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuGraphExecDestroy(MemorySegment graphExec) {
        try { return (int) cuGraphExecDestroy.invokeExact(graphExec); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }

    public int cuGraphDestroy(MemorySegment graph) {
        try { return (int) cuGraphDestroy.invokeExact(graph); } catch (Throwable t) { throw NativeLibrary.rethrow(t); }
    }
}

package io.moe4j.backend.cuda.driver;

/**
 * A failed CUDA driver or NVRTC call. The message names the call and the error as the library names it
 * ({@code cuGetErrorName}/{@code cuGetErrorString}, or {@code nvrtcGetErrorString} plus the compile log), so a
 * failure read in a CI log says what went wrong without a debugger.
 */
public class CudaException extends RuntimeException {
    private final String call;
    private final int code;

    public CudaException(String call, int code, String message) {
        super(message);
        this.call = call;
        this.code = code;
    }

    public CudaException(String message, Throwable cause) {
        super(message, cause);
        this.call = "";
        this.code = -1;
    }

    /** The native function that failed, e.g. {@code cuMemAlloc_v2}; empty when no single call is to blame. */
    public String call() {
        return call;
    }

    /** The CUresult or nvrtcResult it returned, or -1 when the failure was not a return code. */
    public int code() {
        return code;
    }
}

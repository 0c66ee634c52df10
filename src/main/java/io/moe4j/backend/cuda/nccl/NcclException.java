package io.moe4j.backend.cuda.nccl;

import io.moe4j.backend.cuda.driver.CudaException;

/**
 * A failed NCCL call or a missing NCCL library. The message names the call, the {@code ncclResult_t} by its enum
 * name and NCCL's own text ({@code ncclGetErrorString}), and, where NCCL recorded one, its last error message
 * ({@code ncclGetLastError}), which says which argument or transport was at fault.
 */
public final class NcclException extends CudaException {
    public NcclException(String call, int code, String message) {
        super(call, code, message);
    }

    public NcclException(String message, Throwable cause) {
        super(message, cause);
    }
}

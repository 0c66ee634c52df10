package io.moe4j.backend.cuda.nccl;

/**
 * An open NCCL group ({@code ncclGroupStart}) on the calling thread; {@link #close()} ends it
 * ({@code ncclGroupEnd}), which is when the grouped operations are launched. Close it on the thread that opened it.
 */
public final class NcclGroup implements AutoCloseable {
    private final Nccl nccl;
    private boolean closed;

    NcclGroup(Nccl nccl) {
        this.nccl = nccl;
    }

    /** Ends the group; a failure of any grouped operation is reported here. */
    @Override
    public void close() {
        if (!closed) {
            closed = true;
            nccl.check("ncclGroupEnd", nccl.ncclGroupEnd());
        }
    }
}

package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import java.util.concurrent.ConcurrentLinkedDeque;
import java.util.function.Function;

/**
 * The workspaces of one owner's calls ({@link CudaExperts}, {@link CudaRouter}): each call takes one, so concurrent
 * calls never share a stream or buffers, and gives it back for the next. Closed with its owner.
 */
final class WorkspacePool implements AutoCloseable {
    private final CudaContext context;
    private final ConcurrentLinkedDeque<Workspace> idle = new ConcurrentLinkedDeque<>();

    WorkspacePool(CudaContext context) {
        this.context = context;
    }

    /**
     * Runs {@code call} in a workspace of the pool (a new one when all are in use). A call that throws closes its
     * workspace instead of giving it back: its stream may hold a failed launch.
     */
    <T> T call(Function<Workspace, T> call) {
        Workspace ws = idle.pollFirst();
        if (ws == null) {
            ws = new Workspace(context);
        }
        T result;
        try {
            result = call.apply(ws);
        } catch (RuntimeException e) {
            ws.close();
            throw e;
        }
        idle.addFirst(ws);
        return result;
    }

    @Override
    public void close() {
        Workspace ws;
        while ((ws = idle.pollFirst()) != null) {
            ws.close();
        }
    }
}

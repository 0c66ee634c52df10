package io.moe4j.backend.cuda.driver;

import static java.lang.foreign.ValueLayout.ADDRESS;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/** An instantiated CUDA graph captured from a stream ({@link CudaStream#capture}); replay with {@link #launch}. */
public final class CudaGraph implements AutoCloseable {
    private final CudaDriver cu;
    private final MemorySegment graph;
    private final MemorySegment exec;
    private boolean closed;

    private CudaGraph(CudaDriver cu, MemorySegment graph, MemorySegment exec) {
        this.cu = cu;
        this.graph = graph;
        this.exec = exec;
    }

    static CudaGraph instantiate(CudaDriver cu, MemorySegment graph) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = arena.allocate(ADDRESS);
            int r = cu.cuGraphInstantiate(out, graph, 0L);
            if (r != 0) {
                cu.cuGraphDestroy(graph);
                cu.check("cuGraphInstantiateWithFlags", r);
            }
            return new CudaGraph(cu, graph, out.get(ADDRESS, 0));
        }
    }

    public void launch(CudaStream stream) {
        if (closed) {
            throw new IllegalStateException("graph already destroyed");
        }
        cu.check("cuGraphLaunch", cu.cuGraphLaunch(exec, stream.handle()));
    }

    @Override
    public void close() {
        if (!closed) {
            closed = true;
            cu.check("cuGraphExecDestroy", cu.cuGraphExecDestroy(exec));
            cu.check("cuGraphDestroy", cu.cuGraphDestroy(graph));
        }
    }
}

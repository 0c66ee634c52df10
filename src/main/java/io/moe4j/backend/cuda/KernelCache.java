package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaDriver;
import io.moe4j.backend.cuda.driver.CudaFunction;
import io.moe4j.backend.cuda.driver.CudaModule;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The experts pipeline's kernels, compiled on first use for the device in hand (through {@link KernelCompiler}'s
 * disk cache) and kept loaded: one module per (source file, defines). Thread-safe.
 */
final class KernelCache implements AutoCloseable {
    private final CudaContext context;
    private final KernelCompiler compiler;
    private final Map<Key, Loaded> loaded = new HashMap<>();
    /** How often each kernel name was asked for: every dispatch asks right before it launches, so tests can tell. */
    private final Map<String, Long> requests = new HashMap<>();

    private record Key(String file, List<String> defines) {
    }

    private record Loaded(CudaModule module, Map<String, Kernel> functions) {
    }

    /** A kernel and the dynamic shared memory a launch of it may ask for. */
    record Kernel(CudaFunction function, int sharedLimit) {
    }

    KernelCache(CudaContext context, KernelCompiler compiler) {
        this.context = context;
        this.compiler = compiler;
    }

    synchronized Kernel get(String file, String name, List<String> defines) {
        requests.merge(name, 1L, Long::sum);
        Key key = new Key(file, List.copyOf(defines));
        Loaded l = loaded.get(key);
        if (l == null) {
            byte[] cubin = compiler.compile(KernelSource.resource(file, defines));
            l = new Loaded(context.loadModule(cubin), new HashMap<>());
            loaded.put(key, l);
        }
        Kernel k = l.functions().get(name);
        if (k == null) {
            CudaFunction f = l.module().function(name, KernelSource.overlapReady(name));
            // Rows staged in shared memory may pass the default 48 KiB: allow what the device allows a block.
            int limit = context.device().maxSharedPerBlockOptIn() - f.attribute(CudaDriver.FUNC_SHARED_SIZE_BYTES);
            f.setMaxDynamicSharedBytes(limit);
            k = new Kernel(f, limit);
            l.functions().put(name, k);
        }
        return k;
    }

    /** How many times {@link #get} was asked for a kernel of this name, compiled or not. */
    synchronized long requests(String name) {
        return requests.getOrDefault(name, 0L);
    }

    @Override
    public synchronized void close() {
        for (Loaded l : loaded.values()) {
            l.module().close();
        }
        loaded.clear();
    }
}

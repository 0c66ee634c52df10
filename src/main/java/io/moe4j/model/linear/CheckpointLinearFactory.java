package io.moe4j.model.linear;

import io.moe4j.MoeException;
import io.moe4j.backend.Workers;
import io.moe4j.backend.cpu.CpuMatrices;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;

import java.lang.foreign.Arena;
import java.util.concurrent.ForkJoinPool;

/**
 * The linears of one checkpoint on one backend. Each module's format comes from the quantization config
 * ({@link QuantizationConfig#linearMethod}); its tensors are read from the mapped checkpoint, and whatever a backend
 * converts or repacks lives in this factory's arena, so the linears it made must not be used after it is closed.
 * Thread-safe: loading and forward calls may come from several threads.
 */
final class CheckpointLinearFactory implements LinearFactory {
    private final Checkpoint checkpoint;
    private final QuantizationConfig quantization;
    private final Linears.Backend backend;
    private final Arena arena = Arena.ofShared();
    private final CpuMatrices matrices;
    private final ForkJoinPool emulationPool;

    CheckpointLinearFactory(Checkpoint checkpoint, QuantizationConfig quantization, Linears.Backend backend,
                            int threads, Workers shared) {
        this.checkpoint = checkpoint;
        this.quantization = quantization;
        this.backend = backend;
        this.matrices = backend != Linears.Backend.CPU ? null
                : shared != null ? new CpuMatrices(shared) : new CpuMatrices(threads);
        this.emulationPool = backend == Linears.Backend.EMULATION && threads > 1 ? new ForkJoinPool(threads) : null;
    }

    /** The method the quantization config gives {@code module} (unquantized where it is excluded). */
    LinearMethod method(String module) {
        return quantization.linearMethod(module);
    }

    @Override
    public LoadedLinear load(String module, int inFeatures, int outFeatures, boolean bias) {
        if (inFeatures <= 0 || outFeatures <= 0) {
            throw new IllegalArgumentException(module + ": a linear needs positive sizes, got in " + inFeatures
                    + ", out " + outFeatures);
        }
        LinearMethod method = method(module);
        try {
            LinearWeights w;
            float[] b;
            synchronized (arena) {
                w = method.load(checkpoint, module, outFeatures, inFeatures, arena);
                b = LinearBias.load(checkpoint, module, outFeatures, bias);
            }
            return switch (backend) {
                case EMULATION -> new EmulationLinear(module, w, b, emulationPool);
                case CPU -> {
                    synchronized (arena) {
                        yield new CpuLinear(module, w, b, matrices, arena);
                    }
                }
            };
        } catch (MoeException e) {
            throw e;
        } catch (IllegalArgumentException e) {
            throw new MoeException(checkpoint.root() + ": linear '" + module + "' (" + method.scheme().name() + "): "
                    + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        if (matrices != null) {
            matrices.close();
        }
        if (emulationPool != null) {
            emulationPool.shutdown();
        }
        arena.close();
    }
}

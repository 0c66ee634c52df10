package io.moe4j.model.linear;

import io.moe4j.MoeException;
import io.moe4j.backend.Workers;
import io.moe4j.config.ModelConfig;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.safetensors.Checkpoint;

import java.util.Locale;

/** Where decoders get their {@link LinearFactory}. */
public final class Linears {
    /** The backends that run linears: {@code emulation} (the exact float reference) and {@code cpu}. */
    public enum Backend {
        EMULATION, CPU;

        public static Backend of(String name) {
            return switch (name == null ? "" : name.toLowerCase(Locale.ROOT)) {
                case "emulation" -> EMULATION;
                case "cpu" -> CPU;
                default -> throw new MoeException("backend '" + name + "' has no dense linears (supported: emulation, cpu)");
            };
        }
    }

    private Linears() {
    }

    /**
     * The linears of a checkpoint on {@code backend} ("emulation" or "cpu"), in the formats its config's
     * {@code quantization_config} gives each module, with up to {@code threads} threads per forward call. The factory
     * owns what the backend converts (its arena and worker pool): close it after the last use of its linears.
     */
    public static LinearFactory factory(Checkpoint ckpt, ModelConfig config, String backend, int threads) {
        return factory(ckpt, QuantizationConfig.of(config), Backend.of(backend), threads);
    }

    public static LinearFactory factory(Checkpoint ckpt, QuantizationConfig quantization, Backend backend, int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        return new CheckpointLinearFactory(ckpt, quantization, backend, threads, null);
    }

    /**
     * The linears of a checkpoint on {@code backend}, run on a model's shared workers (the cpu backend's loops; the
     * emulation's exact rows use as many threads of their own), which closing the factory leaves running.
     */
    public static LinearFactory factory(Checkpoint ckpt, ModelConfig config, String backend, Workers workers) {
        return new CheckpointLinearFactory(ckpt, QuantizationConfig.of(config), Backend.of(backend), workers.threads(),
                workers);
    }
}

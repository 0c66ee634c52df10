package io.moe4j.model;

import io.moe4j.safetensors.Checkpoint;

/**
 * Builds decoders that run on a device rather than in the host layers, for one {@link ModelOptions#backend()}.
 * Implementations are found with {@link java.util.ServiceLoader} (so this package does not depend on theirs);
 * {@code io.moe4j.model.cuda.CudaDecoders} is the one for {@code cuda}.
 */
public interface DeviceDecoders {

    /** The backend name this provider answers to. */
    String backend();

    /**
     * Loads the decoder of {@code config} from the checkpoint (which stays open, owned by the caller, for the
     * decoder's life); fails with "unsupported on &lt;backend&gt;: ..." for what it does not run.
     *
     * @param contextLimit the most positions a sequence will hold
     */
    DecoderRuntime load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options, int contextLimit);
}

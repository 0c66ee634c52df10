package io.moe4j.model.cuda;

import io.moe4j.model.DecoderConfig;
import io.moe4j.model.DecoderRuntime;
import io.moe4j.model.DeviceDecoders;
import io.moe4j.model.ModelOptions;
import io.moe4j.safetensors.Checkpoint;

/**
 * The {@code cuda} backend's whole-model decoder: {@link DeviceModel} on one GPU, {@link ExpertParallelModel} over
 * several. Registered as a service.
 */
public final class CudaDecoders implements DeviceDecoders {

    @Override
    public String backend() {
        return ModelOptions.CUDA;
    }

    @Override
    public DecoderRuntime load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options, int contextLimit) {
        return options.gpus() > 1 ? ExpertParallelModel.load(config, checkpoint, options, contextLimit)
                : DeviceModel.load(config, checkpoint, options, contextLimit);
    }
}

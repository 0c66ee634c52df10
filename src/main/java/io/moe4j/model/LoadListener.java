package io.moe4j.model;

/**
 * Told as a model's layers load ({@link ModelOptions#loadListener}): a checkpoint of tens of gigabytes takes a while
 * to read, pack or upload, and a command shows it. Called on the loading thread after each layer, with the layers
 * done and the model's count.
 */
@FunctionalInterface
public interface LoadListener {
    /** Nothing to tell. */
    LoadListener NONE = (done, of) -> { };

    void layerLoaded(int done, int of);
}

package io.moe4j.model;

/**
 * A decoder stack that runs somewhere other than the host layers of {@link Model} (a model resident on a device):
 * it owns its weights and hands out the state of each sequence. Chosen by {@link ModelOptions#backend()}.
 */
public interface DecoderRuntime extends AutoCloseable {

    /** The state of a new, empty sequence. */
    SequenceState newSequence();

    @Override
    void close();
}

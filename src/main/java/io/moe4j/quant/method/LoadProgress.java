package io.moe4j.quant.method;

import io.moe4j.quant.LoadOptions;

/** Bytes loaded so far, reported to {@link LoadOptions#progress()}. */
final class LoadProgress {
    private final LoadOptions options;
    private long done;

    LoadProgress(LoadOptions options) {
        this.options = options;
    }

    void add(long bytes) {
        done += bytes;
        if (options != null && options.progress() != null) {
            options.progress().accept(done);
        }
    }
}

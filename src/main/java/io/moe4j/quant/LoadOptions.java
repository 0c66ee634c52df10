package io.moe4j.quant;

import java.util.function.LongConsumer;

/**
 * How to load a layer's experts.
 *
 * @param localExperts the global ids of the experts to hold here (expert parallelism); null for all
 * @param progress     called with bytes loaded so far, for progress bars on long loads; may be a no-op
 */
public record LoadOptions(int[] localExperts, LongConsumer progress) {
    public static final LoadOptions ALL = new LoadOptions(null, bytes -> {
    });

    public boolean holdsAll() {
        return localExperts == null;
    }
}

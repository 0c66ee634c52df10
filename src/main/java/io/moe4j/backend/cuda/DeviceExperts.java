package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * An expert stack resident on the device in the kernels' layout: the checkpoint's bytes, each row of codes padded
 * to whole 16-byte chunks (zeros), scales as they were. Made by {@link CudaGroupedGemm#upload}; frees its memory
 * on {@link #close()}.
 */
public final class DeviceExperts implements AutoCloseable {
    private final WeightFormat format;
    private final int experts;
    private final int rows;
    private final int cols;
    private final int group;
    private final long bytesPerExpert;
    private final DeviceBuffer codes;
    private final DeviceBuffer scales;

    DeviceExperts(PackedExperts host, DeviceBuffer codes, DeviceBuffer scales) {
        this.format = host.format();
        this.experts = host.experts();
        this.rows = host.rows();
        this.cols = host.cols();
        this.group = host.group();
        this.bytesPerExpert = host.bytesPerExpert();
        this.codes = codes;
        this.scales = scales;
    }

    public WeightFormat format() {
        return format;
    }

    public int experts() {
        return experts;
    }

    /** N: output features. */
    public int rows() {
        return rows;
    }

    /** K: input features. */
    public int cols() {
        return cols;
    }

    public int group() {
        return group;
    }

    /** Chunks of 16 bytes per device row. */
    int chunksPerRow() {
        return Math.ceilDiv(cols, format.elementsPerChunk());
    }

    /** Packed bytes (codes and scales) of one expert as stored: the bytes a GEMV reads per routed expert. */
    public long bytesPerExpert() {
        return bytesPerExpert;
    }

    DeviceBuffer codes() {
        return codes;
    }

    /** Null for BF16. */
    DeviceBuffer scales() {
        return scales;
    }

    @Override
    public void close() {
        try {
            codes.close();
        } finally {
            if (scales != null) {
                scales.close();
            }
        }
    }
}

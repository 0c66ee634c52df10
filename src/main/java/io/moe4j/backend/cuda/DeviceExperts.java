package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * An expert stack resident on the device in a kernel's layout, made by {@link CudaGroupedGemm#upload}; frees its
 * memory on {@link #close()}. Holds the packed bytes only (codes and scales, never dequantized values).
 */
public final class DeviceExperts implements AutoCloseable {
    /** How the codes sit in device memory. */
    enum Layout {
        /** The checkpoint's rows, each padded with zeros to whole 16-byte chunks; scales unchanged. */
        ROWS,
        /** MXFP4 in tensor-core fragment order (16-row tiles x 64-element block pairs), see gemv_mxfp4_mma.cu. */
        MXFP4_MMA_TILES
    }

    private final WeightFormat format;
    private final int experts;
    private final int rows;
    private final int cols;
    private final int group;
    private final long bytesPerExpert;
    private final Layout layout;
    private final boolean specialScales;
    private final DeviceBuffer codes;
    private final DeviceBuffer scales;

    DeviceExperts(PackedExperts host, Layout layout, boolean specialScales, DeviceBuffer codes, DeviceBuffer scales) {
        this.format = host.format();
        this.experts = host.experts();
        this.rows = host.rows();
        this.cols = host.cols();
        this.group = host.group();
        this.bytesPerExpert = host.bytesPerExpert();
        this.layout = layout;
        this.specialScales = specialScales;
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

    /** Packed bytes (codes and scales) of one expert as stored: the bytes a GEMV reads per routed expert. */
    public long bytesPerExpert() {
        return bytesPerExpert;
    }

    Layout layout() {
        return layout;
    }

    /** Whether an MXFP4 stack has E8M0 scales 0 or 255, which the fast scale decode does not cover. */
    boolean specialScales() {
        return specialScales;
    }

    /** Chunks of 16 bytes per device row (ROWS layout). */
    int chunksPerRow() {
        return Math.ceilDiv(cols, format.elementsPerChunk());
    }

    /** 16-row tiles (MXFP4_MMA_TILES layout). */
    int rowTiles() {
        return Math.ceilDiv(rows, 16);
    }

    /** 64-element MX block pairs along K (MXFP4_MMA_TILES layout). */
    int blockPairs() {
        return Math.ceilDiv(cols, 64);
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

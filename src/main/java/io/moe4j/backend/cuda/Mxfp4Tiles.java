package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * An MXFP4 expert stack resident on the device in tensor-core fragment order (16-row tiles x 64-element block
 * pairs, see gemv_mxfp4_mma.cu), made by {@link Mxfp4Gemv#upload}; frees its memory on {@link #close()}. Holds the
 * packed bytes only (codes and scales, never dequantized values).
 */
public final class Mxfp4Tiles implements AutoCloseable {
    private final int experts;
    private final int rows;
    private final int cols;
    private final long bytesPerExpert;
    private final boolean specialScales;
    private final DeviceBuffer codes;
    private final DeviceBuffer scales;

    Mxfp4Tiles(Mxfp4Stack host, boolean specialScales, DeviceBuffer codes, DeviceBuffer scales) {
        this.experts = host.experts();
        this.rows = host.rows();
        this.cols = host.cols();
        this.bytesPerExpert = host.bytesPerExpert();
        this.specialScales = specialScales;
        this.codes = codes;
        this.scales = scales;
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

    /** Packed bytes (codes and scales) of one expert as stored: the bytes a GEMV reads per routed expert. */
    public long bytesPerExpert() {
        return bytesPerExpert;
    }

    /** Whether the stack has E8M0 scales 0 or 255, which the fast scale decode does not cover. */
    boolean specialScales() {
        return specialScales;
    }

    /** 16-row tiles. */
    int rowTiles() {
        return Math.ceilDiv(rows, 16);
    }

    /** 64-element MX block pairs along K. */
    int blockPairs() {
        return Math.ceilDiv(cols, 64);
    }

    DeviceBuffer codes() {
        return codes;
    }

    DeviceBuffer scales() {
        return scales;
    }

    @Override
    public void close() {
        try {
            codes.close();
        } finally {
            scales.close();
        }
    }
}

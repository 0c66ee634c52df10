package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * One of a layer's two expert stacks (w13 or w2) resident on the device, packed, in the layout of the kernels
 * that multiply it: MXFP4 in tensor-core fragment order ({@link Mxfp4Matrix}), everything else as checkpoint rows
 * read in 32-element units ({@link UnitMatrix}).
 */
sealed interface DeviceMatrix extends AutoCloseable permits Mxfp4Matrix, UnitMatrix {

    /** Output features (N). */
    int rows();

    /** Input features (K). */
    int cols();

    /**
     * Per expert, the input column each device column holds ([E][cols] ints), where the codes were reordered on
     * upload (act-order); null when columns are in checkpoint order. The GEMM's input rows are written in this order.
     */
    DeviceBuffer columnOrder();

    /** Names the kernels that run it, for support reasons and logs. */
    String kernels();

    @Override
    void close();
}

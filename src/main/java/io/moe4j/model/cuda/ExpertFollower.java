package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * A rank's share of another rank's pass: with no rows of its own it still joins every MoE layer's exchange
 * ({@link ExpertExchange}), contributing zero rows and running its experts on the rows the others sent, so that the
 * collectives pair up. Attention and dense layers are skipped (they have no collectives). One pass at a time.
 */
final class ExpertFollower implements AutoCloseable {
    private final DeviceModel model;
    private final ModelOps ops;
    private final ExpertExchange exchange;
    /** [rows, hidden]: the layer outputs this rank receives for the padding rows, never read. */
    private DeviceBuffer out;
    private int rows;

    ExpertFollower(DeviceModel model) {
        this.model = model;
        this.ops = model.openOps();
        this.exchange = model.newExchange(ops);
    }

    /** Every MoE layer's exchange of a pass whose ranks hold {@code perRank} rows each, this one none. */
    void follow(int perRank) {
        ops.context().makeCurrent();
        if (perRank > rows) {
            ops.synchronize();
            if (out != null) {
                out.close();
            }
            rows = Math.max(perRank, 2 * rows);
            out = ops.allocate(4L * rows * model.config().hidden());
        }
        for (DeviceModel.Layer layer : model.layers()) {
            if (layer.feedForward() instanceof DeviceModel.Moe m) {
                exchange.routed(m, out, 0, perRank, out);
            }
        }
        ops.synchronize();
    }

    @Override
    public void close() {
        ops.synchronize();
        exchange.close();
        if (out != null) {
            out.close();
        }
        ops.close();
    }
}

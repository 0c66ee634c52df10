package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.nccl.NcclComm;
import io.moe4j.backend.cuda.nccl.NcclDataType;
import io.moe4j.backend.cuda.nccl.NcclReduction;
import io.moe4j.routing.Routing;

/**
 * A MoE layer's routed experts over the rows of every rank of an expert-parallel model, on one rank: the ranks'
 * rows are all-gathered (each rank contributes the same number, padded with zero rows), every rank routes all of
 * them with the layer's (replicated) router and runs the experts it holds on them (experts held elsewhere contribute
 * zero), and a reduce-scatter sums the ranks' partial outputs, leaving each rank the sum for its own rows. This is
 * the all-gather / reduce-scatter form of the dispatch and combine: with top-8 routing over 2 or 4 ranks a row
 * reaches nearly every rank anyway, so an all-to-all of only the chosen rows would move about as many bytes (and
 * NCCL's all-to-all measured slower: docs/expert-parallel.md); it needs no counts exchanged before the move.
 *
 * <p>Every rank must call {@link #routed} for the same layers with the same {@code perRank}, in the same order (the
 * collectives pair up across ranks). One pass at a time; the buffers grow on demand.
 */
final class ExpertExchange implements AutoCloseable {
    private static final int FLOAT = 4;

    private final NcclComm comm;
    private final ModelOps ops;
    private final int hidden;
    private final int experts;
    /** [perRank, hidden]: this rank's rows padded with zeros when it has fewer. */
    private DeviceBuffer send;
    /** [ranks · perRank, hidden]: every rank's rows, then the experts' partial outputs. */
    private DeviceBuffer gathered;
    private DeviceBuffer partial;
    /** [ranks · perRank, experts] float64 router logits. */
    private DeviceBuffer logits;
    private int capacity;

    /** @param experts the most routed experts of a MoE layer of the model (the logits' width) */
    ExpertExchange(NcclComm comm, ModelOps ops, int hidden, int experts) {
        this.comm = comm;
        this.ops = ops;
        this.hidden = hidden;
        this.experts = experts;
    }

    /**
     * Layer {@code m}'s routed experts: the first {@code rows} rows of {@code xn} are this rank's ({@code rows} ≤
     * {@code perRank}; 0 for a rank with no rows this pass), and the first {@code perRank} rows of {@code out} receive
     * their outputs summed over the ranks' experts (rows past {@code rows} get the padding's, to be ignored).
     */
    void routed(DeviceModel.Moe m, DeviceBuffer xn, int rows, int perRank, DeviceBuffer out) {
        if (rows < 0 || rows > perRank) {
            throw new IllegalArgumentException(rows + " rows of " + perRank + " a rank");
        }
        int ranks = comm.size();
        int all = ranks * perRank;
        reserve(perRank);
        long rowBytes = (long) FLOAT * hidden;
        DeviceBuffer mine = xn;
        if (rows < perRank) {
            send.fillAsync((byte) 0, ops.stream());
            if (rows > 0) {
                send.copyFromDeviceAsync(xn, 0, 0, rows * rowBytes, ops.stream());
            }
            mine = send;
        }
        comm.allGather(mine, gathered, (long) perRank * hidden, NcclDataType.FLOAT32, ops.stream());
        int width = m.layer().router().spec().numExperts();
        ops.routerLogits(gathered.pointer(), m.routerWeight().pointer(), pointer(m.routerBias()), logits.pointer(),
                all, width, hidden);
        Routing routing = m.layer().router().select(ops.readDoubles(logits, all * width), all);
        ops.experts(m.layer().experts(), gathered, all, routing, partial);
        comm.reduceScatter(partial, out, (long) perRank * hidden, NcclDataType.FLOAT32, NcclReduction.SUM,
                ops.stream());
    }

    private void reserve(int perRank) {
        if (perRank <= capacity) {
            return;
        }
        int rows = Math.max(perRank, 2 * capacity); // before close() clears the capacity
        ops.synchronize();
        close();
        long all = (long) comm.size() * rows;
        send = ops.allocate((long) FLOAT * rows * hidden);
        gathered = ops.allocate(FLOAT * all * hidden);
        partial = ops.allocate(FLOAT * all * hidden);
        logits = ops.allocate(8L * all * experts);
        capacity = rows;
    }

    private static long pointer(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    @Override
    public void close() {
        for (DeviceBuffer b : new DeviceBuffer[] {send, gathered, partial, logits}) {
            if (b != null) {
                b.close();
            }
        }
        send = gathered = partial = logits = null;
        capacity = 0;
    }
}

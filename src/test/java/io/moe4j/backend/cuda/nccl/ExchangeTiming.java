package io.moe4j.backend.cuda.nccl;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;

/**
 * NCCL's own time for the bytes one MoE exchange moves over {@code ranks} GPUs, with nothing else running (benches):
 * the all-gather of every rank's {@code rows} × {@code hidden} float32 rows and the reduce-scatter of the partial
 * outputs that the whole-model exchange runs, against an all-to-all of the same bytes (each rank sending a block of
 * those rows to every rank, itself included, as grouped send/receive; once to dispatch, once to combine). Each from
 * one thread over communicators of {@code ncclCommInitAll}, timed from the launch to the last stream's end; medians.
 *
 * @param gatherScatterMs the all-gather and the reduce-scatter of one exchange
 * @param allToAllMs      two all-to-alls (dispatch and combine) of the same bytes
 * @param linkBytes       bytes a rank sends to other ranks in one exchange, both ways together:
 *                        2 (N − 1) · rows · hidden · 4
 */
public record ExchangeTiming(int ranks, int rows, int hidden, double gatherScatterMs, double allToAllMs,
                             long linkBytes) {

    /** What each rank sends to the others per second in the exchange, GB/s. */
    public double gatherScatterGbps() {
        return linkBytes / (gatherScatterMs * 1e6);
    }

    public double allToAllGbps() {
        return linkBytes / (allToAllMs * 1e6);
    }

    /** Measures both over devices 0..ranks−1, {@code reps} times each after two warm-ups. */
    public static ExchangeTiming measure(Nccl nccl, int ranks, int rows, int hidden, int reps) {
        long block = (long) rows * hidden;
        List<NcclComm> comms = NcclComm.initAll(nccl, IntStream.range(0, ranks).toArray());
        List<CudaContext> ctxs = new ArrayList<>();
        List<CudaStream> streams = new ArrayList<>();
        List<DeviceBuffer[]> bufs = new ArrayList<>();
        try {
            for (int d = 0; d < ranks; d++) {
                CudaContext ctx = CudaRuntime.open(d);
                ctxs.add(ctx);
                streams.add(ctx.createStream());
                DeviceBuffer mine = ctx.allocate(4 * block);
                DeviceBuffer all = ctx.allocate(4 * block * ranks);
                DeviceBuffer other = ctx.allocate(4 * block * ranks);
                mine.fill((byte) 0);
                all.fill((byte) 0);
                other.fill((byte) 0);
                bufs.add(new DeviceBuffer[] {mine, all, other});
            }
            double[] gs = new double[reps];
            double[] a2a = new double[reps];
            for (int it = -2; it < reps; it++) {
                long a = System.nanoTime();
                try (NcclGroup g = nccl.group()) {
                    for (int d = 0; d < ranks; d++) {
                        comms.get(d).allGather(bufs.get(d)[0], bufs.get(d)[1], block, NcclDataType.FLOAT32,
                                streams.get(d));
                    }
                }
                try (NcclGroup g = nccl.group()) {
                    for (int d = 0; d < ranks; d++) {
                        comms.get(d).reduceScatter(bufs.get(d)[1], bufs.get(d)[0], block, NcclDataType.FLOAT32,
                                NcclReduction.SUM, streams.get(d));
                    }
                }
                sync(ctxs, streams);
                long b = System.nanoTime();
                for (int pass = 0; pass < 2; pass++) {
                    try (NcclGroup g = nccl.group()) {
                        for (int d = 0; d < ranks; d++) {
                            for (int p = 0; p < ranks; p++) {
                                comms.get(d).send(bufs.get(d)[1], 4 * block * p, block, NcclDataType.FLOAT32, p,
                                        streams.get(d));
                                comms.get(d).recv(bufs.get(d)[2], 4 * block * p, block, NcclDataType.FLOAT32, p,
                                        streams.get(d));
                            }
                        }
                    }
                }
                sync(ctxs, streams);
                long c = System.nanoTime();
                if (it >= 0) {
                    gs[it] = (b - a) / 1e6;
                    a2a[it] = (c - b) / 1e6;
                }
            }
            Arrays.sort(gs);
            Arrays.sort(a2a);
            return new ExchangeTiming(ranks, rows, hidden, gs[reps / 2], a2a[reps / 2], 2L * (ranks - 1) * 4 * block);
        } finally {
            for (int d = 0; d < ctxs.size(); d++) {
                ctxs.get(d).makeCurrent();
                if (d < bufs.size()) {
                    for (DeviceBuffer b : bufs.get(d)) {
                        b.close();
                    }
                }
                if (d < streams.size()) {
                    streams.get(d).close();
                }
            }
            for (NcclComm c : comms) {
                c.close();
            }
            for (CudaContext c : ctxs) {
                c.close();
            }
        }
    }

    private static void sync(List<CudaContext> ctxs, List<CudaStream> streams) {
        for (int d = 0; d < ctxs.size(); d++) {
            ctxs.get(d).makeCurrent();
            streams.get(d).synchronize();
        }
    }
}

package io.moe4j.backend.cuda.nccl;

import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * NCCL communicators on the GPUs of this machine, one process: all-reduce, all-gather and grouped send/receive give
 * exactly the values the ranks sent. On one GPU the communicators have a single rank (a copy each, a send to itself);
 * the thread-per-device test runs on every GPU present, so on a multi-GPU machine it exercises real transfers.
 * Skipped without a CUDA device or without NCCL.
 */
class NcclCommTest {
    private static final int N = 1037; // odd, so no operation gets a round size by luck
    private static Nccl nccl;
    private static int devices;

    @BeforeAll
    static void requireGpuAndNccl() {
        CudaProbe cuda = CudaRuntime.probe();
        assumeTrue(cuda.available(), () -> "no usable CUDA device: " + cuda.reason());
        NcclProbe probe = Nccl.probe();
        assumeTrue(probe.available(), () -> "NCCL not available: " + probe.reason());
        nccl = probe.nccl().orElseThrow();
        devices = cuda.deviceCount();
        System.out.println(probe.reason() + "; " + devices + " device(s): " + cuda.reason());
    }

    @Test
    void singleRankCommunicatorCopiesThroughEveryOperation() {
        try (CudaContext ctx = CudaRuntime.open(0); Arena arena = Arena.ofConfined()) {
            List<NcclComm> comms = NcclComm.initAll(nccl, 0);
            assertThat(comms).hasSize(1);
            try (NcclComm comm = comms.getFirst(); CudaStream stream = ctx.createStream();
                 DeviceBuffer a = ctx.allocate(4L * N); DeviceBuffer b = ctx.allocate(4L * N)) {
                assertThat(comm.rank()).isZero();
                assertThat(comm.size()).isEqualTo(1);
                assertThat(comm.device()).isZero();
                float[] x = values(0, N);
                a.copyFrom(arena.allocateFrom(JAVA_FLOAT, x));

                b.fill((byte) 0xFF);
                comm.allReduce(a, b, N, NcclDataType.FLOAT32, NcclReduction.SUM, stream);
                stream.synchronize();
                assertThat(floats(b, N, arena)).containsExactly(x);

                b.fill((byte) 0xFF);
                comm.allGather(a, b, N, NcclDataType.FLOAT32, stream);
                stream.synchronize();
                assertThat(floats(b, N, arena)).containsExactly(x);

                b.fill((byte) 0xFF);
                comm.reduceScatter(a, b, N, NcclDataType.FLOAT32, NcclReduction.SUM, stream);
                stream.synchronize();
                assertThat(floats(b, N, arena)).containsExactly(x);

                // To itself: the send and the receive wait on each other, so they go in one group.
                b.fill((byte) 0);
                int half = N / 2;
                try (NcclGroup group = nccl.group()) {
                    comm.send(a, 4L * (N - half), half, NcclDataType.FLOAT32, 0, stream);
                    comm.recv(b, 0, half, NcclDataType.FLOAT32, 0, stream);
                }
                stream.synchronize();
                float[] got = floats(b, N, arena);
                for (int i = 0; i < N; i++) {
                    assertThat(got[i]).as("element %d", i).isEqualTo(i < half ? x[N - half + i] : 0f);
                }
                assertThat(comm.asyncError()).isZero();
            }
        }
    }

    /** One thread per device, each joining with ncclCommInitRank: sums, gathers and a ring of sends between ranks. */
    @Test
    void threadPerDeviceRanksReduceGatherAndPassARing() throws Exception {
        int ranks = devices;
        NcclUniqueId id = nccl.uniqueId();
        ExecutorService pool = Executors.newFixedThreadPool(ranks);
        try {
            List<Future<?>> work = new ArrayList<>();
            for (int r = 0; r < ranks; r++) {
                int rank = r;
                work.add(pool.submit(() -> {
                    runRank(rank, ranks, id);
                    return null;
                }));
            }
            for (Future<?> f : work) {
                f.get(120, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    private static void runRank(int rank, int ranks, NcclUniqueId id) {
        try (CudaContext ctx = CudaRuntime.open(rank); Arena arena = Arena.ofConfined();
             NcclComm comm = NcclComm.initRank(nccl, ranks, id, rank); CudaStream stream = ctx.createStream();
             DeviceBuffer mine = ctx.allocate(4L * N); DeviceBuffer out = ctx.allocate(4L * N * ranks)) {
            assertThat(comm.rank()).isEqualTo(rank);
            assertThat(comm.size()).isEqualTo(ranks);
            assertThat(comm.device()).isEqualTo(rank);
            int[] own = ints(rank, N);
            mine.copyFrom(arena.allocateFrom(JAVA_INT, own));

            comm.allReduce(mine, out, N, NcclDataType.INT32, NcclReduction.SUM, stream);
            stream.synchronize();
            int[] sum = new int[N];
            for (int r = 0; r < ranks; r++) {
                int[] v = ints(r, N);
                for (int i = 0; i < N; i++) {
                    sum[i] += v[i];
                }
            }
            assertThat(ints(out, N, arena)).as("all-reduce on rank %d", rank).containsExactly(sum);

            comm.allGather(mine, out, N, NcclDataType.INT32, stream);
            stream.synchronize();
            int[] gathered = ints(out, N * ranks, arena);
            for (int r = 0; r < ranks; r++) {
                int[] want = ints(r, N);
                for (int i = 0; i < N; i++) {
                    assertThat(gathered[r * N + i]).as("all-gather on rank %d, from rank %d, element %d", rank, r, i)
                            .isEqualTo(want[i]);
                }
            }

            // every rank sends rank-count blocks of N / ranks; block r of the sum lands on rank r
            int block = N / ranks;
            comm.reduceScatter(mine, out, block, NcclDataType.INT32, NcclReduction.SUM, stream);
            stream.synchronize();
            int[] scattered = ints(out, block, arena);
            for (int i = 0; i < block; i++) {
                assertThat(scattered[i]).as("reduce-scatter on rank %d, element %d", rank, i)
                        .isEqualTo(sum[rank * block + i]);
            }

            out.fill((byte) 0);
            try (NcclGroup group = nccl.group()) {
                comm.send(mine, 0, N, NcclDataType.INT32, (rank + 1) % ranks, stream);
                comm.recv(out, 0, N, NcclDataType.INT32, (rank + ranks - 1) % ranks, stream);
            }
            stream.synchronize();
            assertThat(ints(out, N, arena)).as("ring receive on rank %d", rank)
                    .containsExactly(ints((rank + ranks - 1) % ranks, N));
        }
    }

    @Test
    void badRankIsNcclsInvalidArgumentNamedByTheCall() {
        try (CudaContext ctx = CudaRuntime.open(0)) {
            NcclUniqueId id = nccl.uniqueId();
            assertThatThrownBy(() -> NcclComm.initRank(nccl, 1, id, 3)).isInstanceOf(NcclException.class)
                    .hasMessageStartingWith("ncclCommInitRank failed: ncclInvalidArgument (")
                    .satisfies(e -> assertThat(((NcclException) e).call()).isEqualTo("ncclCommInitRank"));
        }
    }

    @Test
    void countsBeyondTheBufferAndPeersOutsideTheCommunicatorAreRefusedBeforeNccl() {
        try (CudaContext ctx = CudaRuntime.open(0); NcclComm comm = NcclComm.initAll(nccl, 0).getFirst();
             CudaStream stream = ctx.createStream(); DeviceBuffer a = ctx.allocate(64)) {
            assertThatThrownBy(() -> comm.allReduce(a, a, 17, NcclDataType.FLOAT32, NcclReduction.SUM, stream))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 68 bytes; the buffer has 64");
            assertThatThrownBy(() -> comm.send(a, 0, 4, NcclDataType.FLOAT32, 1, stream))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("peer rank 1");
            assertThatThrownBy(() -> comm.recv(a, 62, 2, NcclDataType.BFLOAT16, 0, stream))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("needs 66 bytes");
        }
    }

    private static float[] values(int rank, int n) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) {
            v[i] = (rank + 1) * 1000f + i * 0.25f - 100f;
        }
        return v;
    }

    private static int[] ints(int rank, int n) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++) {
            v[i] = (rank + 1) * 1_000_000 + i * 3 - 500;
        }
        return v;
    }

    private static float[] floats(DeviceBuffer b, int n, Arena arena) {
        MemorySegment host = arena.allocate(JAVA_FLOAT, n);
        b.copyTo(host);
        return host.toArray(JAVA_FLOAT);
    }

    private static int[] ints(DeviceBuffer b, int n, Arena arena) {
        MemorySegment host = arena.allocate(JAVA_INT, n);
        b.copyTo(host);
        return host.toArray(JAVA_INT);
    }
}

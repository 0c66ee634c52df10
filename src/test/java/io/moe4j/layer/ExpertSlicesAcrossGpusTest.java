package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.nccl.Nccl;
import io.moe4j.backend.cuda.nccl.NcclComm;
import io.moe4j.backend.cuda.nccl.NcclDataType;
import io.moe4j.backend.cuda.nccl.NcclProbe;
import io.moe4j.backend.cuda.nccl.NcclReduction;
import io.moe4j.backend.cuda.nccl.NcclUniqueId;
import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Expert parallelism across the GPUs of one host, with replicated tokens: every device holds the experts whose id
 * modulo the device count is its ordinal (the slice with expert 0 adds the shared experts), runs the layer on the
 * same input, and an NCCL all-reduce sums the slices' outputs on the devices; every rank's sum must be the whole
 * layer's output on device 0. Every conformance case; skipped without two GPUs and NCCL.
 */
class ExpertSlicesAcrossGpusTest {
    private static Nccl nccl;
    private static int devices;

    @BeforeAll
    static void requireGpusAndNccl() {
        CudaProbe cuda = CudaRuntime.probe();
        assumeTrue(cuda.available(), () -> "no usable CUDA device: " + cuda.reason());
        devices = cuda.deviceCount();
        assumeTrue(devices >= 2, () -> "one CUDA device: slices across GPUs need two");
        NcclProbe probe = Nccl.probe();
        assumeTrue(probe.available(), () -> "NCCL not available: " + probe.reason());
        nccl = probe.nccl().orElseThrow();
    }

    static List<String> cases() {
        return ConformanceCases.names();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("cases")
    void slicesOnEveryDeviceAllReduceToTheWholeLayer(String name) throws Exception {
        ConformanceCases.Case c = ConformanceCases.load(name);
        MoeLayerOptions cuda = MoeLayerOptions.defaults().withBackend("cuda").withThreads(2);
        float[] want;
        float[] x;
        int experts;
        try (MoeLayer whole = MoeLayer.load(c.dir(), c.layer(), cuda)) {
            x = ForwardJob.readInput(c.dir().resolve("io.safetensors"), "hidden_states", whole.config().hidden());
            want = whole.forward(x, x.length / whole.config().hidden()).output();
            experts = whole.config().numExperts();
        }
        NcclUniqueId id = nccl.uniqueId();
        ExecutorService pool = Executors.newFixedThreadPool(devices);
        try {
            List<Future<float[]>> sums = new ArrayList<>();
            for (int d = 0; d < devices; d++) {
                int device = d;
                int[] slice = IntStream.range(0, experts).filter(e -> e % devices == device).toArray();
                sums.add(pool.submit(() -> sliceAllReduced(c, cuda.withLocalExperts(slice).withDevice(device), x,
                        device, id)));
            }
            for (int d = 0; d < devices; d++) {
                float[] got = sums.get(d).get(300, TimeUnit.SECONDS);
                // float sums in another order (each slice's pairs, then the slices) differ by a few ulps; but a
                // slice brings fewer routed pairs than the whole layer, which can take another kernel (Quark MXFP4's
                // GEMV pieces, other activation rounding): on one H200, slices summed on the host against the whole
                // layer gave 3e-8..6e-8 for every case at 2, 4 and 8 slices except qwen3_quark_w_mxfp4 (8 slices:
                // 2.6e-4) and qwen3_quark_w_mxfp4_a_fp8 (4: 3.4e-4, 8: 1.1e-3). A slice missing or added twice is
                // off by far more than the case's tolerance for any backend.
                assertThat(relL2(got, want)).as("%s: all-reduced slices on device %d vs the whole layer", name, d)
                        .isLessThan(c.anyBackendTolerance());
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** This device's slice run on x, its output all-reduced (sum) with the other devices' and read back. */
    private static float[] sliceAllReduced(ConformanceCases.Case c, MoeLayerOptions options, float[] x, int device,
                                           NcclUniqueId id) {
        float[] part;
        try (MoeLayer slice = MoeLayer.load(c.dir(), c.layer(), options)) {
            part = slice.forward(x, x.length / slice.config().hidden()).output();
        }
        long bytes = 4L * part.length;
        try (CudaContext ctx = CudaRuntime.open(device); Arena arena = Arena.ofConfined();
             NcclComm comm = NcclComm.initRank(nccl, devices, id, device); CudaStream stream = ctx.createStream();
             DeviceBuffer mine = ctx.allocate(bytes); DeviceBuffer sum = ctx.allocate(bytes)) {
            assertThat(comm.device()).isEqualTo(device);
            mine.copyFrom(arena.allocateFrom(ValueLayout.JAVA_FLOAT, part));
            comm.allReduce(mine, sum, part.length, NcclDataType.FLOAT32, NcclReduction.SUM, stream);
            stream.synchronize();
            MemorySegment host = arena.allocate(bytes);
            sum.copyTo(host);
            return host.toArray(ValueLayout.JAVA_FLOAT);
        }
    }

    @Test
    void aLayerOnADeviceThisMachineLacksIsRefusedNamingTheCount() {
        ConformanceCases.Case c = ConformanceCases.load(ConformanceCases.names().getFirst());
        MoeLayerOptions beyond = MoeLayerOptions.defaults().withBackend("cuda").withThreads(2).withDevice(devices);
        assertThatThrownBy(() -> MoeLayer.load(c.dir(), c.layer(), beyond)).isInstanceOf(MoeException.class)
                .hasMessageContaining("no CUDA device " + devices)
                .hasMessageContaining("this machine has " + devices + " devices");
    }
}

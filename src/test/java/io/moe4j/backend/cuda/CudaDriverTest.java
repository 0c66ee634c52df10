package io.moe4j.backend.cuda;

import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_FLOAT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.moe4j.backend.cuda.driver.CudaContext;
import io.moe4j.backend.cuda.driver.CudaEvent;
import io.moe4j.backend.cuda.driver.CudaException;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.Nvrtc;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The binding's typed objects on a real device; skipped where there is none. */
class CudaDriverTest {
    private static CudaContext context;

    @BeforeAll
    static void open() {
        if (CudaRuntime.probe().available()) {
            context = CudaRuntime.open(0);
        }
    }

    @AfterAll
    static void close() {
        if (context != null) {
            context.close();
        }
    }

    @BeforeEach
    void requireGpu() {
        CudaProbe probe = CudaRuntime.probe();
        assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
    }

    @Test
    void bytesSurviveARoundTripIncludingAsyncAndDeviceToDevice() {
        SplittableRandom rnd = new SplittableRandom(1);
        try (Arena arena = Arena.ofConfined();
                CudaStream stream = context.createStream();
                DeviceBuffer a = context.allocate(1 << 20);
                DeviceBuffer b = context.allocate(1 << 20)) {
            MemorySegment host = arena.allocate(1 << 20);
            for (long i = 0; i < host.byteSize(); i++) {
                host.set(JAVA_BYTE, i, (byte) rnd.nextInt());
            }
            a.copyFromAsync(host, 0, stream);
            b.copyFromDeviceAsync(a, 0, 0, 1 << 20, stream);
            MemorySegment back = arena.allocate(1 << 20);
            b.copyToAsync(back, 0, stream);
            stream.synchronize();

            assertThat(back.mismatch(host)).isEqualTo(-1);
        }
    }

    @Test
    void pitchedUploadPadsRows() {
        try (Arena arena = Arena.ofConfined(); DeviceBuffer d = context.allocate(5 * 16)) {
            MemorySegment host = arena.allocate(5 * 11);
            for (int i = 0; i < host.byteSize(); i++) {
                host.set(JAVA_BYTE, i, (byte) (i + 1));
            }
            d.fill((byte) 0);
            d.copyFromPitched(host, 11, 16, 11, 5);
            MemorySegment back = arena.allocate(5 * 16);
            d.copyTo(back);

            for (int r = 0; r < 5; r++) {
                for (int c = 0; c < 16; c++) {
                    byte want = c < 11 ? (byte) (r * 11 + c + 1) : 0;
                    assertThat(back.get(JAVA_BYTE, r * 16L + c)).as("row %d col %d", r, c).isEqualTo(want);
                }
            }
        }
    }

    @Test
    void outOfRangeCopiesAreRefusedBeforeReachingTheDriver() {
        try (Arena arena = Arena.ofConfined(); DeviceBuffer d = context.allocate(64)) {
            assertThatThrownBy(() -> d.copyFrom(arena.allocate(65))).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void driverErrorsNameTheCallAndTheError() {
        assertThatThrownBy(() -> context.allocate(1L << 50))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("cuMemAlloc_v2")
                .hasMessageContaining("CUDA_ERROR_OUT_OF_MEMORY");
    }

    @Test
    void compileErrorsCarryTheNvrtcLog() {
        KernelCompiler compiler = new KernelCompiler(Nvrtc.get(), context.device(), Optional.empty());
        KernelSource broken = new KernelSource("broken.cu", "extern \"C\" __global__ void k() { undeclared_thing(); }",
                java.util.Map.of(), List.of());

        assertThatThrownBy(() -> compiler.compile(broken))
                .isInstanceOf(CudaException.class)
                .hasMessageContaining("NVRTC_ERROR_COMPILATION")
                .hasMessageContaining("undeclared_thing");
    }

    @Test
    void compiledKernelsAreCachedOnDiskAndReused(@TempDir Path cache) throws IOException {
        KernelCompiler compiler = new KernelCompiler(Nvrtc.get(), context.device(), Optional.of(cache));
        KernelSource source = KernelSource.resource("gemv_bf16.cu", List.of("-DMOE4J_ROWS=2"));

        byte[] first = compiler.compile(source);
        List<Path> files;
        try (Stream<Path> s = Files.list(cache)) {
            files = s.toList();
        }
        assertThat(files).hasSize(1);
        assertThat(files.get(0).getFileName().toString()).matches("[0-9a-f]{64}\\.cubin");
        Files.write(files.get(0), new byte[] {42}); // a cache hit must return the file's bytes, not recompile
        assertThat(compiler.compile(source)).containsExactly(42);
        assertThat(first.length).isGreaterThan(1000);
    }

    @Test
    void capturedGraphReplaysTheSameWorkAndEventsTimeIt() {
        SplittableRandom rnd = new SplittableRandom(2);
        try (Arena arena = Arena.ofConfined();
                Mxfp4Gemv gemm = Mxfp4Gemv.create(context);
                CudaStream stream = context.createStream();
                CudaEvent start = context.createEvent();
                CudaEvent end = context.createEvent();
                Mxfp4Tiles w = gemm.upload(RandomExperts.mxfp4(arena, rnd, 2, 64, 256, 118, 136).mxfp4());
                DeviceBuffer x = context.allocate(4 * 256);
                DeviceBuffer routes = context.allocate(Routes.bytes(2));
                DeviceBuffer direct = context.allocate(4 * 2 * 64);
                DeviceBuffer replayed = context.allocate(4 * 2 * 64)) {
            x.copyFrom(arena.allocateFrom(JAVA_FLOAT, RandomExperts.activations(rnd, 1, 256)));
            routes.copyFrom(Routes.pack(arena, new int[] {1, 0}, new int[] {0, 0}, 2, 1));
            gemm.forward(w, x, routes, 2, direct, stream);
            replayed.fillWords(0x7FC00000, 0, 128);
            try (CudaGraph graph = stream.capture(() -> gemm.forward(w, x, routes, 2, replayed, stream))) {
                start.record(stream);
                graph.launch(stream);
                graph.launch(stream);
                end.record(stream);
                end.synchronize();
                assertThat(end.elapsedMillisSince(start)).isGreaterThan(0f);
            }
            MemorySegment a = arena.allocate(direct.byteSize());
            MemorySegment b = arena.allocate(replayed.byteSize());
            direct.copyTo(a);
            replayed.copyTo(b);
            assertThat(b.mismatch(a)).isEqualTo(-1);
        }
    }
}

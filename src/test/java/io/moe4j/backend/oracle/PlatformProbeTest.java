package io.moe4j.backend.oracle;

import io.moe4j.MoeException;
import io.moe4j.backend.Platform;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.cuda.driver.CudaDevice;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.parallel.ResourceLock;

import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The platform probe on this machine, its poses, and its /proc/cpuinfo reading. */
class PlatformProbeTest {

    @Test
    void probingThisMachineNeverFailsAndIsConsistent() {
        Platform p = PlatformProbe.probeReal();
        assertThat(p.cpuCores()).isEqualTo(Runtime.getRuntime().availableProcessors());
        // Surefire runs with --add-modules jdk.incubator.vector.
        int preferred = jdk.incubator.vector.VectorSpecies.ofPreferred(float.class).vectorBitSize();
        assertThat(p.vectorBitSize()).isEqualTo(preferred >= 128 ? preferred : 0);
        assertThat(p.vectorApi()).isEqualTo(p.vectorBitSize() > 0);
        Platform.CudaInfo c = p.cuda();
        if (c.deviceCount() > 0) {
            assertThat(c.computeCapability()).isGreaterThanOrEqualTo(30);
            assertThat(c.memoryBytes()).isPositive();
            assertThat(c.deviceName()).isNotBlank();
        } else {
            assertThat(c.available()).isFalse();
            assertThat(c.reason()).isNotBlank();
        }
        assertThat(PlatformProbe.describe(p)).startsWith("CPU: " + p.cpuCores() + " cores; Vector API: ");
    }

    @Test
    void thePlatformAndTheCudaBackendAskOneProbe() {
        Platform.CudaInfo c = PlatformProbe.probeReal().cuda();
        CudaProbe probe = CudaRuntime.probe();
        assertThat(c.available()).isEqualTo(probe.available());
        assertThat(c).isEqualTo(PlatformProbe.cudaInfo(probe));
    }

    @Test
    void anAbsentDriverIsNoDeviceWithTheLibraryNamed() {
        Platform.CudaInfo c = PlatformProbe.cudaInfo(CudaRuntime.probe("libcuda-moe4j-absent.so.1", null));
        assertThat(c.available()).isFalse();
        assertThat(c.deviceCount()).isZero();
        assertThat(c.reason()).contains("libcuda-moe4j-absent.so.1").contains("not found");
        assertThat(PlatformProbe.describe(new Platform(2, true, 256, "avx2", c)))
                .contains("CUDA: none: CUDA driver library libcuda-moe4j-absent.so.1 not found");
    }

    @Test
    void aDeviceWithoutNvrtcIsShownButNotUsable() {
        CudaDevice h100 = new CudaDevice(0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 85_045_460_992L, 50 << 20, 232_448);
        String reason = "NVRTC (libnvrtc.so) not found; set -Dmoe4j.cuda.nvrtc=/path/libnvrtc.so.N or MOE4J_NVRTC";
        Platform.CudaInfo c = PlatformProbe.cudaInfo(new CudaProbe(false, reason, Optional.of(h100), 2, 12080,
                Optional.empty()));
        assertThat(c).isEqualTo(new Platform.CudaInfo(false, reason, 2, "NVIDIA H100 80GB HBM3", 90,
                85_045_460_992L));
        assertThat(PlatformProbe.describe(new Platform(16, true, 512, "", c))).endsWith(
                "CUDA: 2 devices; device 0: NVIDIA H100 80GB HBM3, compute capability 9.0, 79.2 GiB; not usable: "
                        + reason);
    }

    @Test
    void aUsableDeviceHasNoReason() {
        CudaDevice h200 = new CudaDevice(0, "NVIDIA H200", 9, 0, 132, 150_109_880_320L, 60 << 20, 232_448);
        Platform.CudaInfo c = PlatformProbe.cudaInfo(new CudaProbe(true, "NVIDIA H200 (sm_90 ...)", Optional.of(h200),
                1, 13000, Optional.of("/usr/local/cuda/lib64/libnvrtc.so.13")));
        assertThat(c).isEqualTo(new Platform.CudaInfo(true, "", 1, "NVIDIA H200", 90, 150_109_880_320L));
    }

    @Test
    void posesReplaceTheGpuAndSaySo() {
        Platform base = FakeBackends.CPU;
        Platform h100 = PlatformProbe.pose("h100", base);
        assertThat(h100.cuda()).isEqualTo(new Platform.CudaInfo(true, "posed", 1,
                "NVIDIA H100 80GB HBM3 (posed: h100)", 90, 85_045_460_992L));
        assertThat(h100.cpuCores()).isEqualTo(16);
        assertThat(PlatformProbe.pose("h200", base).cuda().deviceName()).isEqualTo("NVIDIA H200 (posed: h200)");
        // cuDeviceTotalMem_v2 as measured on an H200 (nvidia-smi says 143771 MiB; the driver reserves some).
        assertThat(PlatformProbe.pose("h200", base).cuda().memoryBytes()).isEqualTo(150_109_880_320L);
        Platform cpu = PlatformProbe.pose("cpu", h100);
        assertThat(cpu.vectorApi()).isTrue();
        assertThat(cpu.cuda().available()).isFalse();
        assertThat(cpu.cuda().reason()).isEqualTo("no CUDA driver (libcuda.so.1) found (posed: cpu)");
        Platform novec = PlatformProbe.pose("cpu-novector", base);
        assertThat(novec.vectorApi()).isFalse();
        assertThat(novec.vectorBitSize()).isZero();
        assertThat(PlatformProbe.describe(h100)).isEqualTo("""
                CPU: 16 cores; Vector API: 512-bit preferred species; CPU features: avx512f avx2 fma
                CUDA: 1 device; device 0: NVIDIA H100 80GB HBM3 (posed: h100), compute capability 9.0, 79.2 GiB""");
        assertThat(PlatformProbe.describe(novec)).isEqualTo("""
                CPU: 16 cores; Vector API: not available; CPU features: avx512f avx2 fma
                CUDA: none: no CUDA driver (libcuda.so.1) found (posed: cpu-novector)""");
    }

    @Test
    @ResourceLock("system-properties")
    void thePropertyPoses() {
        String old = System.getProperty(PlatformProbe.POSE_PROPERTY);
        try {
            System.setProperty(PlatformProbe.POSE_PROPERTY, "H100");
            assertThat(PlatformProbe.activePose()).contains("h100");
            assertThat(PlatformProbe.probe().cuda().computeCapability()).isEqualTo(90);
            assertThat(PlatformProbe.probe().cpuCores()).isEqualTo(PlatformProbe.probeReal().cpuCores());
            System.setProperty(PlatformProbe.POSE_PROPERTY, "b300");
            assertThatThrownBy(PlatformProbe::activePose).isInstanceOf(MoeException.class)
                    .hasMessage("-Dmoe4j.platform=b300: unknown platform pose; choose cpu, cpu-novector, h100, h200");
            System.setProperty(PlatformProbe.POSE_PROPERTY, "real");
            assertThat(PlatformProbe.probe()).isEqualTo(PlatformProbe.probeReal());
        } finally {
            if (old == null) {
                System.clearProperty(PlatformProbe.POSE_PROPERTY);
            } else {
                System.setProperty(PlatformProbe.POSE_PROPERTY, old);
            }
        }
    }

    @Test
    void readsTheInterestingFlagsOfX86AndArm() {
        assertThat(PlatformProbe.cpuFeatures(List.of(
                "processor\t: 0",
                "model name\t: Intel(R) Xeon(R) Platinum 8480+",
                "flags\t\t: fpu vme sse sse2 avx fma avx2 avx512f avx512bw avx512vl avx512_bf16 avx512_fp16 amx_bf16 amx_tile f16c",
                "processor\t: 1",
                "flags\t\t: fpu")))
                .isEqualTo("avx512f avx512bw avx512vl avx512_bf16 avx512_fp16 amx_tile amx_bf16 avx2 fma f16c");
        assertThat(PlatformProbe.cpuFeatures(List.of("processor\t: 0",
                "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp sve sve2")))
                .isEqualTo("asimd sve sve2");
        assertThat(PlatformProbe.cpuFeatures(List.of("no colon here", ""))).isEmpty();
    }
}

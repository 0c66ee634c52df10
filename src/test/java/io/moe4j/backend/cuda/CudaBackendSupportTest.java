package io.moe4j.backend.cuda;

import static org.assertj.core.api.Assertions.assertThat;

import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.activation.Activation;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import io.moe4j.routing.RouterKind;
import io.moe4j.routing.RouterSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The backend's answers without touching a GPU: these run everywhere, CI included. */
class CudaBackendSupportTest {

    @Test
    void aMachineWithoutCudaIsUnsupportedWithThePlatformsReasonAndNeverThrows() {
        Platform cpu = Platform.cpuOnly(4, 256);
        MoeProblem p = new MoeProblem(QuantScheme.unquantized(WeightFormat.BF16), 64, 32, 8, 2,
                Activation.SILU_AND_MUL, false);
        Support s = new CudaBackend().support(p, cpu);
        assertThat(s.supported()).isFalse();
        assertThat(s.reason()).isEqualTo(cpu.cuda().reason());
    }

    @ParameterizedTest
    @EnumSource(WeightFormat.class)
    void everyWeightFormatRunsOnHopperNamingItsKernel(WeightFormat f) {
        Support s = CudaBackend.support(f, 90, "NVIDIA H100");
        assertThat(s.supported()).isTrue();
        assertThat(s.reason()).contains(f == WeightFormat.MXFP4 ? "tensor cores" : "CUDA-core").endsWith("on NVIDIA H100");
    }

    @Test
    void olderDevicesAreRefusedWithTheReason() {
        assertThat(CudaBackend.support(WeightFormat.BF16, 75, "Tesla T4").reason())
                .contains("compute capability 8.0+").contains("7.5");
        Support fp8OnAmpere = CudaBackend.support(WeightFormat.FP8_BLOCK, 80, "NVIDIA A100");
        assertThat(fp8OnAmpere.supported()).isFalse();
        assertThat(fp8OnAmpere.reason()).contains("8.9+");
        assertThat(CudaBackend.support(WeightFormat.MXFP4, 80, "NVIDIA A100").supported()).isTrue();
    }

    /** The device router's limits (router.cu), checked without a GPU: beyond them the layer routes on the host. */
    @Test
    void deviceRouterLimitsAreNamed() {
        assertThat(CudaRouter.unsupportedReason(new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 256, 8, true, 8, 4,
                2.5))).isNull();
        assertThat(CudaRouter.unsupportedReason(RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 512, 32, true))).isNull();
        assertThat(CudaRouter.unsupportedReason(RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 1024, 8, true)))
                .contains("512 experts, not 1024");
        assertThat(CudaRouter.unsupportedReason(RouterSpec.simple(RouterKind.SOFTMAX_TOPK, 64, 33, true)))
                .contains("top-k up to 32, not 33");
        assertThat(CudaRouter.unsupportedReason(new RouterSpec(RouterKind.SIGMOID_GROUPED_TOPK, 128, 4, true, 64, 2,
                1.0))).contains("32 expert groups, not 64");
    }
}

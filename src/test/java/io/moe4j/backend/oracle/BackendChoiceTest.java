package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.MoeException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Backend names: moe4j's own, vLLM's --moe-backend, refusals, sources. */
class BackendChoiceTest {

    @ParameterizedTest(name = "{0} → {1}")
    @CsvSource(nullValues = "-", value = {
            "auto, -, -",
            "AUTO, -, -",
            "cuda, cuda, -",
            "cpu, cpu, -",
            "emulation, emulation, -",
            "naive, emulation, -",
            "torch, emulation, -",
            "triton, cuda, -",
            "triton_unfused, cuda, -",
            "marlin, cuda, -",
            "batched_marlin, cuda, -",
            "deep_gemm, cuda, -",
            "deep_gemm_mega_moe, cuda, -",
            "cutlass, cuda, -",
            "flashinfer_trtllm, cuda, -",
            "flashinfer_cutlass, cuda, -",
            "flashinfer_cutedsl, cuda, -",
            "flashinfer_b12x, cuda, -",
            "humming, cuda, -",
            "sm70_skinny, cuda, -",
            "flashinfer_trtllm_afp8, cuda, MXFP8",
            "flashinfer_cutlass_afp8, cuda, MXFP8",
            "FlashInfer-TRTLLM, cuda, -",
            "' Marlin ', cuda, -"})
    void mapsToTheBackendPlayingTheRole(String name, String backend, ActivationKey implied) {
        BackendChoice c = BackendChoice.parse(name);
        assertThat(c.backend()).isEqualTo(backend);
        assertThat(c.isAuto()).isEqualTo(backend == null);
        assertThat(c.impliedActivation()).isEqualTo(implied);
        assertThat(c.source()).isEqualTo("--backend");
    }

    @Test
    void everyAcceptedVllmNameIsInTheTable() {
        assertThat(BackendChoice.VLLM_NAMES.keySet()).containsExactly("triton", "triton_unfused", "marlin",
                "batched_marlin", "deep_gemm", "deep_gemm_mega_moe", "cutlass", "flashinfer_trtllm", "flashinfer_cutlass",
                "flashinfer_cutedsl", "flashinfer_b12x", "humming", "sm70_skinny", "flashinfer_trtllm_afp8",
                "flashinfer_cutlass_afp8", "cpu", "emulation", "naive", "torch", "aiter", "aiter_mxfp4_fp8",
                "aiter_mxfp4_mxfp4", "xpu");
        BackendChoice.VLLM_NAMES.forEach((name, v) -> {
            if (v.refused()) {
                assertThatThrownBy(() -> BackendChoice.parse(name)).isInstanceOf(MoeException.class);
            } else {
                assertThat(BackendChoice.parse(name).backend()).isEqualTo(v.backend());
            }
        });
    }

    @Test
    void rocmAiterVariantsAreRefused() {
        assertThatThrownBy(() -> BackendChoice.parse("aiter_mxfp4_fp8", "MOE4J_MOE_BACKEND"))
                .hasMessage("MoE backend 'aiter_mxfp4_fp8' (MOE4J_MOE_BACKEND) is AMD ROCm's AITER kernel library; moe4j "
                        + "has no ROCm backend; choose " + OracleMatrixTest.ACCEPTED);
    }

    @Test
    void labelsSayWhatItMapsToAndWhereItCameFrom() {
        assertThat(BackendChoice.parse("cuda").label()).isEqualTo("cuda");
        assertThat(BackendChoice.parse("deep_gemm").label()).isEqualTo("deep_gemm (moe4j: cuda)");
        assertThat(BackendChoice.resolve(null, null, Map.of("MOE4J_MOE_BACKEND", "triton"), new Properties()).label())
                .isEqualTo("triton (moe4j: cuda, set by MOE4J_MOE_BACKEND)");
    }

    @Test
    void commandLineBeatsPropertyBeatsEnvironment() {
        Properties props = new Properties();
        props.setProperty("moe4j.moe.backend", "cpu");
        Map<String, String> env = Map.of("MOE4J_MOE_BACKEND", "marlin");
        assertThat(BackendChoice.resolve(null, null, Map.of(), new Properties()).isAuto()).isTrue();
        assertThat(BackendChoice.resolve(null, null, env, new Properties()).backend()).isEqualTo("cuda");
        assertThat(BackendChoice.resolve(null, null, env, props).source()).isEqualTo("-Dmoe4j.moe.backend");
        assertThat(BackendChoice.resolve("emulation", null, env, props).backend()).isEqualTo("emulation");
        assertThat(BackendChoice.resolve(" ", null, env, new Properties()).source()).isEqualTo("MOE4J_MOE_BACKEND");
        // An explicit "auto" (every MoeLayerOptions default) leaves the environment in charge.
        assertThat(BackendChoice.resolve("auto", null, env, new Properties()).backend()).isEqualTo("cuda");
        assertThat(BackendChoice.resolve("auto", null, Map.of(), new Properties()).isAuto()).isTrue();
    }
}

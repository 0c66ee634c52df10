package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.MoeException;
import io.moe4j.backend.MoeProblem;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

import static io.moe4j.backend.oracle.FakeBackends.B200;
import static io.moe4j.backend.oracle.FakeBackends.CPU;
import static io.moe4j.backend.oracle.FakeBackends.H100;
import static io.moe4j.backend.oracle.FakeBackends.H100_NAME;
import static io.moe4j.backend.oracle.FakeBackends.NO_DRIVER;
import static io.moe4j.backend.oracle.FakeBackends.problem;
import static io.moe4j.backend.oracle.FakeBackends.scheme;
import static io.moe4j.backend.oracle.OracleMatrixTest.OK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The user's activation override (the seed's {@code _user_moe_activation_override} / {@code _resolve_activation_key}). */
class ActivationOverrideTest {
    final Oracle oracle = FakeBackends.oracle();
    static final MoeProblem W_MXFP4 = problem(scheme("quark w_mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE), 2880, 2880, 32, 4);
    static final MoeProblem W_MXFP4_A_FP8 = problem(scheme("quark w_mxfp4_a_fp8", WeightFormat.MXFP4, ActivationFormat.FP8_STATIC), 2048, 768, 128, 8);
    static final MoeProblem BF16 = problem(scheme("bf16", WeightFormat.BF16, ActivationFormat.NONE), 2048, 768, 128, 8);

    static BackendChoice env(String... kv) {
        Map<String, String> env = new java.util.HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            env.put(kv[i], kv[i + 1]);
        }
        return BackendChoice.resolve(null, null, env, new Properties());
    }

    @Test
    void overrideContradictingTheCheckpointFailsWithTheSeedsError() {
        assertThatThrownBy(() -> oracle.select(W_MXFP4_A_FP8, CPU, env("MOE4J_MOE_ACTIVATION", "mxfp8")))
                .isInstanceOf(MoeException.class)
                .hasMessage("quark w_mxfp4_a_fp8: checkpoint declares MoE activation=fp8 but MOE4J_MOE_ACTIVATION=mxfp8; "
                        + "remove the override or align it with the checkpoint.");
        assertThatThrownBy(() -> oracle.select(W_MXFP4_A_FP8, H100, BackendChoice.auto().withActivation("bf16", "--activation")))
                .isInstanceOf(MoeException.class)
                .hasMessage("quark w_mxfp4_a_fp8: checkpoint declares MoE activation=fp8 but --activation=bf16; "
                        + "remove the override or align it with the checkpoint.");
        // The conflict is found before any backend is asked, so even the exact reference refuses it.
        assertThatThrownBy(() -> oracle.select(W_MXFP4_A_FP8, CPU, env("MOE4J_MOE_BACKEND", "emulation",
                "MOE4J_MXFP4_ACTIVATION", "mxfp4")))
                .hasMessage("quark w_mxfp4_a_fp8: checkpoint declares MoE activation=fp8 but MOE4J_MXFP4_ACTIVATION=mxfp4; "
                        + "remove the override or align it with the checkpoint.");
    }

    @Test
    void overrideAgreeingWithTheCheckpointChangesNothing() {
        Selection plain = oracle.select(W_MXFP4_A_FP8, H100, BackendChoice.auto());
        Selection agreed = oracle.select(W_MXFP4_A_FP8, H100, env("MOE4J_MOE_ACTIVATION", "FP8"));
        assertThat(agreed).isEqualTo(plain);
        assertThat(agreed.activation()).isEqualTo(ActivationKey.FP8);
        assertThat(agreed.activationFormat()).isEqualTo(ActivationFormat.FP8_STATIC);
    }

    @Test
    void bf16OverrideOnAWeightOnlyLayerIsTheDefault() {
        assertThat(oracle.select(W_MXFP4, H100, env("MOE4J_MOE_ACTIVATION", "bf16")))
                .isEqualTo(oracle.select(W_MXFP4, H100, BackendChoice.auto()));
    }

    @Test
    void fp8OnHopperFallsToTheReferenceThatCanQuantizeActivations() {
        Selection s = oracle.select(W_MXFP4, H100, env("MOE4J_MOE_ACTIVATION", "fp8"));
        assertThat(s.backendName()).isEqualTo("emulation");
        assertThat(s.activation()).isEqualTo(ActivationKey.FP8);
        assertThat(s.activationFormat()).isEqualTo(ActivationFormat.FP8_GROUP128);
        assertThat(s.problem().scheme().name()).isEqualTo("quark w_mxfp4");
        assertThat(s.considered()).extracting(c -> c.support().reason()).startsWith(
                "fp8 activations with MXFP4 weights need compute capability 10.0+ (" + H100_NAME + " is 9.0)",
                "runs MXFP4 weights with bf16 activations, not fp8 (MOE4J_MOE_ACTIVATION=fp8)");
        assertThat(s.reason()).endsWith("; fp8 activations (MOE4J_MOE_ACTIVATION=fp8)");
    }

    @Test
    void mxfp8OnBlackwellRunsOnTheGpuVariant() {
        Selection s = oracle.select(W_MXFP4, B200, env("MOE4J_MOE_ACTIVATION", "mxfp8"));
        assertThat(s.backendName()).isEqualTo("cuda");
        assertThat(s.activation()).isEqualTo(ActivationKey.MXFP8);
        // There is no ActivationFormat.MXFP8: the backend gets the weight-only scheme and the key from the selection.
        assertThat(s.activationFormat()).isEqualTo(ActivationFormat.NONE);
        assertThat(s.reason()).isEqualTo("auto (cuda > cpu > emulation): MXFP4 kernels on NVIDIA B200; "
                + "mxfp8 activations (MOE4J_MOE_ACTIVATION=mxfp8)");
    }

    @Test
    void fp8OnBlackwellAsksTheGpuWithTheDynamicFormat() {
        Selection s = oracle.select(W_MXFP4, B200, BackendChoice.parse("marlin").withActivation("fp8", "--activation"));
        assertThat(s.backendName()).isEqualTo("cuda");
        assertThat(s.activationFormat()).isEqualTo(ActivationFormat.FP8_GROUP128);
        assertThat(s.reason()).isEqualTo("forced by --backend marlin (moe4j: cuda): MXFP4 kernels on NVIDIA B200; "
                + "fp8 activations (--activation=fp8)");
    }

    @Test
    void mxfp8WithNoBackendOfferingItFailsListingEveryReason() {
        assertThatThrownBy(() -> oracle.select(W_MXFP4, CPU, env("MOE4J_MOE_ACTIVATION", "mxfp8")))
                .isInstanceOf(MoeException.class)
                .hasMessage("no MoE backend supports quark w_mxfp4 with mxfp8 activations here: cuda: " + NO_DRIVER
                        + "; cpu: runs MXFP4 weights with bf16 activations, not mxfp8 (MOE4J_MOE_ACTIVATION=mxfp8)"
                        + "; emulation: runs MXFP4 weights with bf16, fp8, int8, mxfp4, mxfp6_e3m2, mxfp6_e2m3 "
                        + "activations, not mxfp8 (MOE4J_MOE_ACTIVATION=mxfp8)");
    }

    @Test
    void mxfp4OnlyOverrideLeavesOtherLayersAlone() {
        BackendChoice c = env("MOE4J_MXFP4_ACTIVATION", "mxfp8");
        assertThat(oracle.select(BF16, B200, c).activation()).isEqualTo(ActivationKey.BF16);
        assertThat(oracle.select(W_MXFP4, B200, c).activation()).isEqualTo(ActivationKey.MXFP8);
        BackendChoice both = env("MOE4J_MXFP4_ACTIVATION", "mxfp8", "MOE4J_MOE_ACTIVATION", "fp8");
        assertThat(oracle.select(W_MXFP4, B200, both).activation()).isEqualTo(ActivationKey.MXFP8);
        assertThat(oracle.select(BF16, CPU, both).activation()).isEqualTo(ActivationKey.FP8);
    }

    @Test
    void commandLineBeatsPropertiesBeatEnvironment() {
        Properties props = new Properties();
        props.setProperty("moe4j.moe.activation", "mxfp4");
        Map<String, String> env = Map.of("MOE4J_MOE_ACTIVATION", "fp8");
        assertThat(BackendChoice.resolve(null, null, env, new Properties()).activationOverrideFor(WeightFormat.BF16).source())
                .isEqualTo("MOE4J_MOE_ACTIVATION=fp8");
        assertThat(BackendChoice.resolve(null, null, env, props).activationOverrideFor(WeightFormat.BF16).source())
                .isEqualTo("-Dmoe4j.moe.activation=mxfp4");
        assertThat(BackendChoice.resolve(null, "int8", env, props).activationOverrides())
                .containsExactly(new BackendChoice.ActivationOverride(ActivationKey.INT8, null, "--activation=int8"));
    }

    @Test
    void unknownActivationIsRefusedNamingTheChoices() {
        assertThatThrownBy(() -> env("MOE4J_MOE_ACTIVATION", "fp9"))
                .isInstanceOf(MoeException.class)
                .hasMessage("MOE4J_MOE_ACTIVATION=fp9: unknown MoE activation; choose one of bf16, fp8, mxfp8, mxfp4, "
                        + "mxfp6_e3m2, mxfp6_e2m3, nvfp4, int8");
    }

    @Test
    void afp8AliasConflictingWithAnOverrideFails() {
        BackendChoice c = BackendChoice.parse("flashinfer_trtllm_afp8").withActivation("bf16", "--activation");
        assertThatThrownBy(() -> oracle.select(W_MXFP4, B200, c))
                .isInstanceOf(MoeException.class)
                .hasMessage("backend flashinfer_trtllm_afp8 (moe4j: cuda) does not support activation=bf16 "
                        + "(--activation=bf16); it runs mxfp8 activations only");
    }

    @Test
    void afp8AliasOnBlackwellRunsMxfp8() {
        Selection s = oracle.select(W_MXFP4, B200, BackendChoice.parse("flashinfer-cutlass-afp8"));
        assertThat(s.backendName()).isEqualTo("cuda");
        assertThat(s.activation()).isEqualTo(ActivationKey.MXFP8);
        assertThat(s.reason()).endsWith("; mxfp8 activations (--backend flashinfer_cutlass_afp8)");
    }

    static Stream<Arguments> overrides() {
        List<Arguments> out = new ArrayList<>();
        for (OracleMatrixTest.Row r : OracleMatrixTest.rows()) {
            for (OracleMatrixTest.Kind k : OracleMatrixTest.Kind.values()) {
                for (String v : List.of("bf16", "fp8", "mxfp8")) {
                    out.add(Arguments.of(r, k, v));
                }
            }
        }
        return out.stream();
    }

    /** Every layer × platform kind × override, under auto. */
    @ParameterizedTest(name = "{0} on {1}, MOE4J_MOE_ACTIVATION={2}")
    @MethodSource("overrides")
    void autoUnderAnOverride(OracleMatrixTest.Row row, OracleMatrixTest.Kind kind, String value) {
        BackendChoice choice = env("MOE4J_MOE_ACTIVATION", value);
        ActivationKey asked = ActivationKey.parse(value, "test");
        ActivationFormat declared = row.scheme().activations();
        String src = " (MOE4J_MOE_ACTIVATION=" + value + ")";
        if (declared != ActivationFormat.NONE && ActivationKey.of(declared) != asked) {
            assertThatThrownBy(() -> oracle.select(row.problem(), kind.platform, choice))
                    .isInstanceOf(MoeException.class)
                    .hasMessage(row.scheme().name() + ": checkpoint declares MoE activation=" + ActivationKey.of(declared)
                            + " but MOE4J_MOE_ACTIVATION=" + value + "; remove the override or align it with the checkpoint.");
            return;
        }
        if (declared != ActivationFormat.NONE || asked == ActivationKey.BF16) {
            assertThat(oracle.select(row.problem(), kind.platform, choice))
                    .isEqualTo(oracle.select(row.problem(), kind.platform, BackendChoice.auto()));
            return;
        }
        // A weight-only layer asked for quantized activations: no fake backend offers them on Hopper or a CPU.
        String w = row.scheme().weights().toString();
        String cuda = OracleMatrixTest.reason(row, kind, "cuda");
        if (cuda.equals(OK)) {
            cuda = row.scheme().weights() == WeightFormat.MXFP4
                    ? asked + " activations with MXFP4 weights need compute capability 10.0+ (" + H100_NAME + " is 9.0)"
                    : "runs " + w + " weights with bf16 activations, not " + asked + src;
        }
        String cpu = OracleMatrixTest.reason(row, kind, "cpu");
        if (cpu.equals(OK)) {
            cpu = "runs " + w + " weights with bf16 activations, not " + asked + src;
        }
        if (asked == ActivationKey.FP8) {
            Selection s = oracle.select(row.problem(), kind.platform, choice);
            assertThat(s.backendName()).isEqualTo("emulation");
            assertThat(s.activationFormat()).isEqualTo(ActivationFormat.FP8_GROUP128);
            assertThat(s.considered()).extracting(c -> c.support().reason()).startsWith(cuda, cpu);
        } else {
            assertThatThrownBy(() -> oracle.select(row.problem(), kind.platform, choice))
                    .isInstanceOf(MoeException.class)
                    .hasMessage("no MoE backend supports " + row.scheme().name() + " with mxfp8 activations here: cuda: "
                            + cuda + "; cpu: " + cpu + "; emulation: runs " + w + " weights with bf16, fp8, int8, mxfp4, "
                            + "mxfp6_e3m2, mxfp6_e2m3 activations, not mxfp8" + src);
        }
    }
}

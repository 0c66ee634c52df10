package io.moe4j.backend.oracle;

import io.moe4j.backend.BackendTraits;
import io.moe4j.MoeException;
import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.backend.emulation.EmulationBackend;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Properties;

import static io.moe4j.backend.oracle.FakeBackends.CPU;
import static io.moe4j.backend.oracle.FakeBackends.CPU_NOVECTOR;
import static io.moe4j.backend.oracle.FakeBackends.H100;
import static io.moe4j.backend.oracle.FakeBackends.problem;
import static io.moe4j.backend.oracle.FakeBackends.scheme;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Whole messages and log lines, written out. */
class OracleTest {
    final Oracle oracle = FakeBackends.oracle();
    static final MoeProblem W_MXFP4 = problem(scheme("quark w_mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE), 2880, 2880, 32, 4);

    @Test
    void forcedGpuLibraryOnACpuOnlyMachineNamesItsReasonAndWhatCan() {
        assertThatThrownBy(() -> oracle.select(W_MXFP4, CPU, BackendChoice.parse("flashinfer_trtllm")))
                .isInstanceOf(MoeException.class)
                .hasMessage("backend flashinfer_trtllm (moe4j: cuda) cannot run quark w_mxfp4 here: no CUDA driver "
                        + "(libcuda.so.1) found; backends that can: cpu, emulation");
    }

    @Test
    void forcedFromTheEnvironmentSaysSo() {
        BackendChoice c = BackendChoice.resolve(null, null, Map.of("MOE4J_MOE_BACKEND", "cpu"), new Properties());
        assertThatThrownBy(() -> oracle.select(W_MXFP4, CPU_NOVECTOR, c))
                .hasMessage("backend cpu (set by MOE4J_MOE_BACKEND) cannot run quark w_mxfp4 here: needs the Vector API "
                        + "(run with --add-modules jdk.incubator.vector); backends that can: emulation");
    }

    @Test
    void autoOnACpuMachine() {
        Selection s = oracle.select(W_MXFP4, CPU, BackendChoice.auto());
        assertThat(s.backendName()).isEqualTo("cpu");
        assertThat(s.reason()).isEqualTo("auto (cuda > cpu > emulation): 512-bit Vector API kernels for MXFP4 weights; "
                + "not cuda: no CUDA driver (libcuda.so.1) found");
        assertThat(s.sizes().padded()).isFalse();
        assertThat(s.logLine()).isEqualTo("MoE backend cpu for quark w_mxfp4 [H 2880, I 2880, 32 experts, top-4, bf16 "
                + "activations]: auto (cuda > cpu > emulation): 512-bit Vector API kernels for MXFP4 weights; not cuda: "
                + "no CUDA driver (libcuda.so.1) found; layout cpu-rowblock");
    }

    @Test
    void autoOnHopperPadsForItsKernels() {
        Selection s = oracle.select(W_MXFP4, H100, BackendChoice.auto());
        assertThat(s.backendName()).isEqualTo("cuda");
        assertThat(s.sizes()).isEqualTo(new BackendTraits.PaddedSizes(2880, 2880, 3072, 2944));
        assertThat(s.layout()).isEqualTo("cuda-marlin-mxfp4");
        assertThat(s.logLine()).isEqualTo("MoE backend cuda for quark w_mxfp4 [H 2880, I 2880, 32 experts, top-4, bf16 "
                + "activations]: auto (cuda > cpu > emulation): MXFP4 kernels on NVIDIA H100 80GB HBM3 (posed: h100); "
                + "pads H 2880→3072, I 2880→2944; layout cuda-marlin-mxfp4");
        MoeProblem bf16 = problem(scheme("bf16", WeightFormat.BF16, ActivationFormat.NONE), 2048, 1000, 128, 8);
        Selection b = oracle.select(bf16, H100, BackendChoice.auto());
        assertThat(b.sizes()).isEqualTo(new BackendTraits.PaddedSizes(2048, 1000, 2048, 1024));
        assertThat(b.layout()).isEqualTo("cuda-tiled");
    }

    @Test
    void forcedEmulationIsTakenEvenWhenFasterOnesCould() {
        Selection s = oracle.select(W_MXFP4, H100, BackendChoice.parse("naive"));
        assertThat(s.backendName()).isEqualTo("emulation");
        assertThat(s.reason()).isEqualTo("forced by --backend naive (moe4j: emulation): runs every scheme exactly in "
                + "Java, on any machine");
        assertThat(s.layout()).isEqualTo(BackendTraits.CANONICAL_LAYOUT);
    }

    @Test
    void aBackendNotInTheBuildIsNamed() {
        Oracle o = new Oracle(new BackendRegistry(List.of(
                new BackendRegistry.Entry(new EmulationBackend(), BackendRegistry.EMULATION_TRAITS),
                BackendRegistry.Entry.of(new FakeBackends.FakeCpu()))));
        assertThatThrownBy(() -> o.select(W_MXFP4, H100, BackendChoice.parse("marlin")))
                .isInstanceOf(MoeException.class)
                .hasMessage("backend marlin (moe4j: cuda) is not in this build (it has emulation, cpu); backends that "
                        + "can run quark w_mxfp4 here: cpu, emulation");
    }

    @Test
    void withoutTheReferenceAutoCanFindNothing() {
        Oracle o = new Oracle(BackendRegistry.of(new FakeBackends.FakeCuda(), new FakeBackends.FakeCpu()));
        assertThatThrownBy(() -> o.select(W_MXFP4, CPU_NOVECTOR, BackendChoice.auto()))
                .isInstanceOf(MoeException.class)
                .hasMessage("no MoE backend supports quark w_mxfp4 here: cuda: no CUDA driver (libcuda.so.1) found; "
                        + "cpu: needs the Vector API (run with --add-modules jdk.incubator.vector)");
        assertThatThrownBy(() -> o.select(W_MXFP4, CPU_NOVECTOR, BackendChoice.parse("cpu")))
                .hasMessage("backend cpu cannot run quark w_mxfp4 here: needs the Vector API (run with --add-modules "
                        + "jdk.incubator.vector); no backend can run it here");
    }

    @Test
    void aBackendWhoseCheckThrowsIsUnsupportedNotFatal() {
        Backend broken = new Backend() {
            public String name() {
                return "cuda";
            }

            public String description() {
                return "broken";
            }

            public Support support(MoeProblem p, Platform platform) {
                throw new IllegalStateException("driver exploded");
            }

            public Experts prepare(ExpertWeights w, ExecutionOptions o) {
                throw new UnsupportedOperationException();
            }
        };
        Oracle o = new Oracle(BackendRegistry.of(broken, new EmulationBackend()));
        Selection s = o.select(W_MXFP4, H100, BackendChoice.auto());
        assertThat(s.backendName()).isEqualTo("emulation");
        assertThat(s.considered().getFirst().support().reason())
                .isEqualTo("its support check failed: java.lang.IllegalStateException: driver exploded");
    }

    @Test
    void priorityCanDifferPerScheme() {
        Oracle o = new Oracle(FakeBackends.registry(),
                BackendPriority.standard().with(WeightFormat.F32, List.of("cpu", "cuda")));
        MoeProblem f32 = problem(scheme("f32", WeightFormat.F32, ActivationFormat.NONE), 64, 64, 4, 2);
        assertThat(o.consider(f32, H100, BackendChoice.auto())).extracting(Candidate::backendName)
                .containsExactly("cpu", "cuda", "emulation");
        assertThat(o.consider(W_MXFP4, H100, BackendChoice.auto())).extracting(Candidate::backendName)
                .containsExactly("cuda", "cpu", "emulation");
    }

    @Test
    void theStandardOracleAlwaysHasAnAnswer() {
        Oracle o = Oracle.standard();
        assertThat(o.registry().names()).contains("cuda", "cpu", "emulation");
        assertThat(o.registry().names().getLast()).isEqualTo("emulation");
        for (OracleMatrixTest.Row r : OracleMatrixTest.rows()) {
            for (Platform p : List.of(H100, CPU, CPU_NOVECTOR)) {
                assertThat(o.select(r.problem(), p, BackendChoice.auto()).considered().getLast().supported()).isTrue();
            }
        }
    }

    @Test
    void registryRefusesTwoBackendsOfOneName() {
        assertThatThrownBy(() -> BackendRegistry.of(new EmulationBackend(), new EmulationBackend()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("backend 'emulation' registered twice");
    }
}

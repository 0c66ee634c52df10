package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.MoeException;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static io.moe4j.backend.oracle.FakeBackends.H100_NAME;
import static io.moe4j.backend.oracle.FakeBackends.NO_DRIVER;
import static io.moe4j.backend.oracle.FakeBackends.problem;
import static io.moe4j.backend.oracle.FakeBackends.scheme;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every scheme moe4j reads × the three platform kinds × the user's choices: the selected backend, every
 * candidate's exact refusal reason, and the exact error of a forced backend that cannot run, of a refused name, of a
 * backend name that implies activations the checkpoint contradicts.
 */
class OracleMatrixTest {
    static final String OK = "OK";
    static final String NOVEC = "needs the Vector API (run with --add-modules jdk.incubator.vector)";
    static final String ACCEPTED = "auto, cuda, cpu, emulation, or a vLLM --moe-backend name (triton, triton_unfused, "
            + "marlin, batched_marlin, deep_gemm, deep_gemm_mega_moe, cutlass, flashinfer_trtllm, flashinfer_cutlass, "
            + "flashinfer_cutedsl, flashinfer_b12x, humming, sm70_skinny, flashinfer_trtllm_afp8, flashinfer_cutlass_afp8, "
            + "naive, torch)";

    /**
     * One layer and the two answers that vary by scheme: the cuda backend's on the posed H100 and the cpu backend's
     * with the Vector API ({@value #OK} or the exact reason). cuda without a GPU, cpu without the Vector API and
     * emulation anywhere do not depend on the scheme.
     */
    record Row(MoeProblem problem, String cudaOnH100, String cpuWithVector) {
        @Override
        public String toString() {
            return problem.scheme().name() + (problem.expertParallel() ? " EP" : "") + " H" + problem.hidden()
                    + " I" + problem.intermediate();
        }

        QuantScheme scheme() {
            return problem.scheme();
        }
    }

    enum Kind {
        H100(FakeBackends.H100), CPU(FakeBackends.CPU), CPU_NOVECTOR(FakeBackends.CPU_NOVECTOR);

        final Platform platform;

        Kind(Platform p) {
            this.platform = p;
        }
    }

    static Row row(String name, WeightFormat w, ActivationFormat a, int h, int i, String cuda, String cpu) {
        return new Row(problem(scheme(name, w, a), h, i, 32, 4), cuda, cpu);
    }

    static List<Row> rows() {
        String gptOssH = "2880";
        List<Row> rows = new ArrayList<>(List.of(
                row("bf16", WeightFormat.BF16, ActivationFormat.NONE, 2048, 768, OK, OK),
                row("f32", WeightFormat.F32, ActivationFormat.NONE, 2048, 768,
                        "no CUDA kernel for F32 expert weights", OK),
                row("mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE, 2880, 2880, OK, OK),
                row("quark w_mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE, 2880, 2880, OK, OK),
                row("quark w_mxfp4_a_mxfp4", WeightFormat.MXFP4, ActivationFormat.MXFP4, 2048, 768,
                        "no CUDA kernel for MXFP4 activations", OK),
                row("quark w_mxfp4_a_fp8", WeightFormat.MXFP4, ActivationFormat.FP8_STATIC, 2048, 768, OK, OK),
                row("quark w_mxfp6_e3m2_a_mxfp6_e3m2", WeightFormat.MXFP6_E3M2, ActivationFormat.MXFP6_E3M2, 2048, 768,
                        "no CUDA kernel for MXFP6_E3M2 weights", "no Vector API kernel for MXFP6_E3M2 weights"),
                row("quark w_mxfp6_e2m3_a_mxfp6_e2m3", WeightFormat.MXFP6_E2M3, ActivationFormat.MXFP6_E2M3, 2048, 768,
                        "no CUDA kernel for MXFP6_E2M3 weights", "no Vector API kernel for MXFP6_E2M3 weights"),
                row("quark w_mxfp6_e3m2_a_fp8", WeightFormat.MXFP6_E3M2, ActivationFormat.FP8_STATIC, 2048, 768,
                        "no CUDA kernel for MXFP6_E3M2 weights", "no Vector API kernel for MXFP6_E3M2 weights"),
                row("quark int8", WeightFormat.INT8_CHANNEL, ActivationFormat.INT8_STATIC, 2048, 768, OK, OK),
                row("compressed-tensors NVFP4", WeightFormat.NVFP4, ActivationFormat.NVFP4, 2048, 768,
                        "NVFP4 activations need compute capability 10.0+ (" + H100_NAME + " is 9.0)",
                        "no Vector API kernel for NVFP4 activations"),
                row("compressed-tensors NVFP4A16", WeightFormat.NVFP4, ActivationFormat.NONE, 4096, 14336, OK, OK),
                row("compressed-tensors FP8 tensor", WeightFormat.FP8_TENSOR, ActivationFormat.FP8_STATIC, 2048, 768, OK, OK),
                row("compressed-tensors FP8 channel", WeightFormat.FP8_CHANNEL, ActivationFormat.FP8_TOKEN, 2048, 768, OK, OK),
                row("compressed-tensors FP8 block", WeightFormat.FP8_BLOCK, ActivationFormat.FP8_GROUP128, 7168, 2048, OK, OK),
                row("compressed-tensors FP8 block", WeightFormat.FP8_BLOCK, ActivationFormat.FP8_GROUP128, 2880, 2880,
                        "FP8 block scales need H and I multiples of 128 (H " + gptOssH + ", I 2880)", OK),
                row("compressed-tensors W4A16", WeightFormat.INT4_GROUP, ActivationFormat.NONE, 2048, 768, OK, OK),
                row("compressed-tensors W8A16", WeightFormat.INT8_CHANNEL, ActivationFormat.NONE, 4096, 14336, OK, OK),
                row("compressed-tensors W4A8", WeightFormat.INT4_GROUP, ActivationFormat.INT8_TOKEN, 2048, 768, OK, OK)));
        rows.add(new Row(new MoeProblem(new QuantScheme("compressed-tensors W4A16 act-order", WeightFormat.INT4_GROUP,
                ActivationFormat.NONE, true), 2048, 768, 128, 8, io.moe4j.activation.Activation.SILU_AND_MUL, false), OK, OK));
        rows.add(new Row(new MoeProblem(scheme("quark w_mxfp4", WeightFormat.MXFP4, ActivationFormat.NONE), 2880, 2880,
                32, 4, io.moe4j.activation.Activation.SWIGLU_OAI, true), OK,
                "expert parallelism is not supported (all experts must be local)"));
        return rows;
    }

    static final List<String> CHOICES = List.of("auto", "cuda", "cpu", "emulation", "triton", "marlin",
            "flashinfer_trtllm", "flashinfer_cutlass", "deep_gemm", "cutlass", "naive", "torch",
            "flashinfer_trtllm_afp8", "aiter", "xpu", "no_such_backend");

    static final Map<String, String> PARSE_ERRORS = Map.of(
            "aiter", "MoE backend 'aiter' (--backend) is AMD ROCm's AITER kernel library; moe4j has no ROCm backend; choose "
                    + ACCEPTED,
            "xpu", "MoE backend 'xpu' (--backend) is Intel's XPU (GPU) kernel library; moe4j has no XPU backend; choose "
                    + ACCEPTED,
            "no_such_backend", "unknown MoE backend 'no_such_backend' (--backend); choose " + ACCEPTED);

    static Stream<Arguments> matrix() {
        List<Arguments> out = new ArrayList<>();
        for (Row r : rows()) {
            for (Kind k : Kind.values()) {
                for (String c : CHOICES) {
                    out.add(Arguments.of(r, k, c));
                }
            }
        }
        return out.stream();
    }

    /** The expected answer of one backend, from the table. */
    static String reason(Row r, Kind k, String backend) {
        return switch (backend) {
            case "cuda" -> k == Kind.H100 ? r.cudaOnH100() : NO_DRIVER;
            case "cpu" -> k == Kind.CPU_NOVECTOR ? NOVEC : r.cpuWithVector();
            case "emulation" -> OK;
            default -> throw new AssertionError(backend);
        };
    }

    static final List<String> ORDER = List.of("cuda", "cpu", "emulation");

    static String moe4jName(String choice) {
        return switch (choice) {
            case "cpu" -> "cpu";
            case "emulation", "naive", "torch" -> "emulation";
            default -> "cuda";
        };
    }

    @ParameterizedTest(name = "{0} on {1}, --backend {2}")
    @MethodSource("matrix")
    void selectsOrRefuses(Row row, Kind kind, String choiceName) {
        Oracle oracle = FakeBackends.oracle();
        if (PARSE_ERRORS.containsKey(choiceName)) {
            assertThatThrownBy(() -> BackendChoice.parse(choiceName)).isInstanceOf(MoeException.class)
                    .hasMessage(PARSE_ERRORS.get(choiceName));
            return;
        }
        BackendChoice choice = BackendChoice.parse(choiceName);
        String name = row.scheme().name();
        if (choiceName.equals("flashinfer_trtllm_afp8")) {
            afp8(oracle, row, kind, choice);
            return;
        }
        List<String> able = ORDER.stream().filter(b -> reason(row, kind, b).equals(OK)).toList();
        String expectedBackend;
        if (choice.isAuto()) {
            expectedBackend = able.getFirst();
        } else {
            String b = moe4jName(choiceName);
            assertThat(choice.backend()).isEqualTo(b);
            String why = reason(row, kind, b);
            if (!why.equals(OK)) {
                String label = choiceName.equals(b) ? b : choiceName + " (moe4j: " + b + ")";
                assertThatThrownBy(() -> oracle.select(row.problem(), kind.platform, choice))
                        .isInstanceOf(MoeException.class)
                        .hasMessage("backend " + label + " cannot run " + name + " here: " + why
                                + "; backends that can: " + String.join(", ", able));
                return;
            }
            expectedBackend = b;
        }
        Selection s = oracle.select(row.problem(), kind.platform, choice);
        assertThat(s.backendName()).isEqualTo(expectedBackend);
        assertThat(s.activation()).isEqualTo(ActivationKey.of(row.scheme().activations()));
        assertThat(s.problem()).isEqualTo(row.problem());
        assertThat(s.considered()).extracting(Candidate::backendName).containsExactlyElementsOf(ORDER);
        for (Candidate c : s.considered()) {
            String want = reason(row, kind, c.backendName());
            assertThat(c.supported()).as(c.toString()).isEqualTo(want.equals(OK));
            if (!want.equals(OK)) {
                assertThat(c.support().reason()).isEqualTo(want);
            }
        }
        assertThat(s.reason()).startsWith(choice.isAuto() ? "auto (cuda > cpu > emulation): "
                : "forced by --backend " + choice.label() + ": ");
        assertThat(s.logLine()).startsWith("MoE backend " + expectedBackend + " for " + name + " [");
    }

    /** vLLM's flashinfer_trtllm_afp8 alias: the cuda backend with MXFP8 activations, which nothing here offers. */
    private static void afp8(Oracle oracle, Row row, Kind kind, BackendChoice choice) {
        QuantScheme s = row.scheme();
        String label = "flashinfer_trtllm_afp8 (moe4j: cuda)";
        if (s.activations() != ActivationFormat.NONE) {
            assertThatThrownBy(() -> oracle.select(row.problem(), kind.platform, choice))
                    .isInstanceOf(MoeException.class)
                    .hasMessage("backend " + label + " does not support activation=" + ActivationKey.of(s.activations())
                            + " (" + s.name() + " declares it); it runs mxfp8 activations only");
            return;
        }
        String src = " (--backend flashinfer_trtllm_afp8)";
        String cuda = reason(row, kind, "cuda");
        if (cuda.equals(OK)) {
            cuda = s.weights() == WeightFormat.MXFP4
                    ? "mxfp8 activations with MXFP4 weights need compute capability 10.0+ (" + H100_NAME + " is 9.0)"
                    : "runs " + s.weights() + " weights with bf16 activations, not mxfp8" + src;
        }
        List<Candidate> considered = oracle.consider(row.problem(), kind.platform, choice);
        String cpu = reason(row, kind, "cpu");
        if (cpu.equals(OK)) {
            cpu = "runs " + s.weights() + " weights with bf16 activations, not mxfp8" + src;
        }
        String emulation = "runs " + s.weights() + " weights with bf16, fp8, int8, mxfp4, mxfp6_e3m2, mxfp6_e2m3 "
                + "activations, not mxfp8" + src;
        assertThat(considered.stream().map(c -> c.backendName() + ": " + c.support().reason()).collect(Collectors.toList()))
                .containsExactly("cuda: " + cuda, "cpu: " + cpu, "emulation: " + emulation);
        assertThat(considered).noneMatch(Candidate::supported);
        String finalCuda = cuda;
        assertThatThrownBy(() -> oracle.select(row.problem(), kind.platform, choice))
                .isInstanceOf(MoeException.class)
                .hasMessage("backend " + label + " cannot run " + s.name() + " with mxfp8 activations here: " + finalCuda
                        + "; no backend can run it here");
    }
}

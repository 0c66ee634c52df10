package io.moe4j.cli;

import io.moe4j.safetensors.SafetensorsFile;
import io.moe4j.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;

import static io.moe4j.testing.Norms.relL2;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe logits} as a user runs it, on the whole-model fixtures of ../shared/conformance-models. */
class LogitsCommandTest {
    static Path fixture(String name) {
        return Path.of(System.getProperty("moe4j.shared", "../shared")).resolve("conformance-models").resolve(name);
    }

    static float[] expectedLogits(Path dir) {
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            return io.tensor("logits").toFloatArray();
        }
    }

    static float[] writtenLogits(Path out, int tokens, int vocab) {
        try (SafetensorsFile f = SafetensorsFile.open(out)) {
            assertThat(f.tensor("logits").shape()).containsExactly(tokens, vocab);
            return f.tensor("logits").toFloatArray();
        }
    }

    @Test
    void writesEveryPositionsLogitsFromI32Ids(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        Path out = tmp.resolve("out.safetensors");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", out.toString(), "--backend", "emulation", "--threads", "1");
        assertThat(r.exit()).as(r.err()).isZero();
        float[] want = expectedLogits(dir);
        assertThat(relL2(writtenLogits(out, 24, 256), want)).isLessThanOrEqualTo(1e-3);
    }

    /** The device decoder through the command: its log line and every position's logits (skipped without a GPU). */
    @Test
    void cudaWritesEveryPositionsLogits(@TempDir Path tmp) {
        io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
        org.junit.jupiter.api.Assumptions.assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
        Path dir = fixture("m_gptoss_mxfp4");
        Path out = tmp.resolve("out.safetensors");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", out.toString(), "--backend", "cuda");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(relL2(writtenLogits(out, 24, 256), expectedLogits(dir))).isLessThanOrEqualTo(anyBackendTolerance(dir));
    }

    static double anyBackendTolerance(Path dir) {
        try {
            return new com.fasterxml.jackson.databind.ObjectMapper().readTree(dir.resolve("case.json").toFile())
                    .path("tolerance").path("any_backend_rel_l2").asDouble(Double.NaN);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void incrementalOnCpuFromI64IdsGivesTheSameLogits(@TempDir Path tmp) {
        Path dir = fixture("m_llama4_bf16");
        int[] ids;
        try (SafetensorsFile io = SafetensorsFile.open(dir.resolve("io.safetensors"))) {
            ids = io.tensor("input_ids").toIntArray();
        }
        long[] wide = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            wide[i] = ids[i];
        }
        Path in = tmp.resolve("in.safetensors");
        new SafetensorsWriter().addI64("input_ids", new long[] {ids.length}, wide).write(in);
        Path out = tmp.resolve("out.safetensors");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", in.toString(), "--output", out.toString(),
                "--backend", "cpu", "--threads", "2", "--incremental");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.err()).contains(ids.length + " positions (one at a time)");
        assertThat(relL2(writtenLogits(out, ids.length, 256), expectedLogits(dir))).isLessThanOrEqualTo(0.02);
    }

    @Test
    void anInputWithoutInputIdsIsOneLineNamingTheTensor(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        Path in = tmp.resolve("in.safetensors");
        new SafetensorsWriter().addI32("tokens", new long[] {2}, new int[] {1, 2}).write(in);
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", in.toString(),
                "--output", tmp.resolve("out.safetensors").toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).startsWith("moe: ").contains("input_ids").contains("tokens").doesNotContain("Exception");
    }

    @Test
    void floatIdsAreRefusedByDtype(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        Path in = tmp.resolve("in.safetensors");
        new SafetensorsWriter().addF32("input_ids", new long[] {2}, new float[] {1, 2}).write(in);
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", in.toString(),
                "--output", tmp.resolve("out.safetensors").toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).contains("input_ids").contains("F32").contains("I32 or I64");
    }

    /** The model options moe generate, chat and serve take: int8 experts on cpu, within the fixture's tolerance. */
    @Test
    void int8ActivationsOnCpuStayWithinTheFixturesTolerance(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        Path out = tmp.resolve("out.safetensors");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", out.toString(), "--backend", "cpu", "--threads", "2", "--activations", "int8");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(relL2(writtenLogits(out, 24, 256), expectedLogits(dir))).isLessThanOrEqualTo(anyBackendTolerance(dir));
    }

    @Test
    void int8ActivationsOnABackendThatComputesInFloatAreRefusedByName(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", tmp.resolve("out.safetensors").toString(), "--backend", "emulation", "--activations", "int8");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("moe: ").contains("--activations int8").contains("not emulation")
                .doesNotContain("\n");
    }

    /** --context caps the positions a sequence holds: a longer input is refused, naming the limit. */
    @Test
    void anInputLongerThanTheContextIsRefused(@TempDir Path tmp) {
        Path dir = fixture("m_gptoss_mxfp4");
        CliTest.Run r = CliTest.moe("logits", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", tmp.resolve("out.safetensors").toString(), "--backend", "emulation", "--context", "8");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).startsWith("moe: ").contains("context limit of 8");
        assertThat(tmp.resolve("out.safetensors")).doesNotExist();
    }
}

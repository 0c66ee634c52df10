package io.moe4j.cli;

import io.moe4j.conformance.ConformanceCases;
import io.moe4j.safetensors.SafetensorsFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The moe command as a user runs it: exit codes, what it prints, one-line errors. */
class CliTest {
    record Run(int exit, String out, String err) {
    }

    static Run moe(String... args) {
        return moeWithInput(null, args);
    }

    /** {@link #moe} with {@code stdin} (when not null) as standard input. */
    static synchronized Run moeWithInput(String stdin, String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        java.io.InputStream oldIn = System.in;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            if (stdin != null) {
                System.setIn(new java.io.ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)));
            }
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int exit = MoeCommand.execute(args);
            return new Run(exit, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
            System.setIn(oldIn);
        }
    }

    static List<String> cases() {
        return ConformanceCases.names();
    }

    @ParameterizedTest
    @MethodSource("cases")
    void inspectListsEveryTensorOfEveryCase(String name) {
        Path dir = ConformanceCases.dir(name);
        Run r = moe("inspect", "--model", dir.resolve("model.safetensors").toString());
        assertThat(r.exit()).as(r.err()).isZero();
        try (SafetensorsFile f = SafetensorsFile.open(dir.resolve("model.safetensors"))) {
            for (String tensor : f.tensors().keySet()) {
                assertThat(r.out()).contains(tensor);
            }
            assertThat(r.out()).contains(f.tensors().size() + " tensors");
        }
    }

    @Test
    void inspectOfADirectoryDescribesItsMoeLayers() {
        Run r = moe("inspect", "--model", ConformanceCases.dir("deepseek_bf16_grouped").toString());
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(r.out()).contains("layer 0: 16 experts, top-4").contains("SIGMOID_GROUPED_TOPK").contains("shared expert");
    }

    @Test
    void versionAndHelpWork() {
        assertThat(moe("--version").out()).startsWith("moe4j ");
        Run help = moe("--help");
        assertThat(help.exit()).isZero();
        assertThat(help.out()).contains("demo").contains("forward").contains("inspect");
    }

    @Test
    void badFilesGiveOneLineAndNonZeroExit(@TempDir Path tmp) throws IOException {
        Path bad = tmp.resolve("bad.safetensors");
        Files.write(bad, new byte[] {8, 0, 0, 0, 0, 0, 0, 0, '{', '}'});
        Run r = moe("inspect", "--model", bad.toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err().strip()).startsWith("moe: ").contains(bad.toString()).doesNotContain("\n").doesNotContain("Exception");
        Run missing = moe("inspect", "--model", tmp.resolve("nothing").toString());
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).contains("no such file");
    }

    @Test
    void forwardWritesOutputTopkIdsAndWeights(@TempDir Path tmp) {
        Path dir = ConformanceCases.dir("mixtral_bf16");
        Path out = tmp.resolve("out.safetensors");
        Run r = moe("forward", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--output", out.toString(), "--backend", "emulation", "--threads", "1");
        assertThat(r.exit()).as(r.err()).isZero();
        try (SafetensorsFile f = SafetensorsFile.open(out)) {
            assertThat(f.tensor("output").shape()).containsExactly(9, 64);
            assertThat(f.tensor("topk_ids").shape()).containsExactly(9, 2);
            assertThat(f.tensor("topk_weights").shape()).containsExactly(9, 2);
        }
    }

    @Test
    void forwardWithAWrongInputTensorNamesIt(@TempDir Path tmp) {
        Path dir = ConformanceCases.dir("mixtral_bf16");
        Run r = moe("forward", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--input-tensor", "nope", "--output", tmp.resolve("o.safetensors").toString());
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).contains("no tensor 'nope'").contains("hidden_states");
        Run shape = moe("forward", "--model", dir.toString(), "--input", dir.resolve("io.safetensors").toString(),
                "--input-tensor", "topk_weights", "--output", tmp.resolve("o.safetensors").toString());
        assertThat(shape.exit()).isEqualTo(1);
        assertThat(shape.err()).contains("'topk_weights'").contains("expected [tokens, 64]");
    }
    /** Every subcommand's help renders as written: picocli warns (and prints raw text) on a stray '%' in a description. */
    @Test
    void everySubcommandsHelpRendersWithoutWarnings() {
        for (String sub : new picocli.CommandLine(new MoeCommand()).getSubcommands().keySet()) {
            if (sub.equals("help")) {
                continue;
            }
            Run r = moe(sub, "--help");
            assertThat(r.exit()).as(sub).isZero();
            assertThat(r.out()).as(sub).startsWith("Usage: moe " + sub);
            assertThat(r.out() + r.err()).as(sub).doesNotContain("WARN").doesNotContain("Could not format");
        }
    }

    /**
     * Every command that runs experts takes --activations with one help text, and every whole-model command takes
     * the same model options (--backend, --threads, --context, --activations).
     */
    @Test
    void activationsAndModelOptionsReadTheSameEverywhere() {
        java.util.Set<String> described = new java.util.HashSet<>();
        for (String sub : List.of("bench", "forward", "logits", "generate", "chat", "serve")) {
            // The option's entry in the list below the synopsis: its lines up to the next option.
            java.util.regex.Matcher m = java.util.regex.Pattern
                    .compile("(?ms)^ +--activations=\\S+(.*?)(?=^ +-|\\z)").matcher(moe(sub, "--help").out());
            assertThat(m.find()).as(sub).isTrue();
            described.add(m.group(1).replaceAll("\\s+", " ").strip());
        }
        assertThat(described).hasSize(1);
        assertThat(described.iterator().next()).contains("float (exact) or int8");
        for (String sub : List.of("logits", "generate", "chat", "serve")) {
            assertThat(moe(sub, "--help").out()).as(sub).contains("--backend=").contains("--threads=")
                    .contains("--context=").contains("--activations=");
        }
    }

    /** Several GPUs are a cuda option: asked of another backend, a one-line error naming both. */
    @Test
    void noCommandIsAUsageError() {
        Run r = moe();
        assertThat(r.exit()).isEqualTo(2);
        assertThat(r.err()).contains("Missing a command").contains("generate").contains("Usage:");
    }

    /** A model path that is missing, a file, or a directory without config.json: each said as it is, in one line. */
    @Test
    void aModelPathThatIsNoModelSaysWhy(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp) throws Exception {
        java.nio.file.Path file = java.nio.file.Files.writeString(tmp.resolve("weights.bin"), "x");
        java.nio.file.Path empty = java.nio.file.Files.createDirectory(tmp.resolve("empty"));
        String[][] cases = {{tmp.resolve("missing").toString(), "no such directory"},
                {file.toString(), "not a model directory"}, {empty.toString(), "no config.json"}};
        for (String[] c : cases) {
            Run r = moe("generate", "--model", c[0], "--prompt", "hi", "--no-warmup");
            assertThat(r.exit()).as(r.err()).isEqualTo(1);
            assertThat(r.err().strip()).as(c[0]).contains(c[1]).doesNotContain("\n").doesNotContain("Exception");
        }
    }

    /** A flag picocli cannot read is one line and a pointer to --help, not the command's whole usage. */
    @Test
    void aFlagThatDoesNotParseIsOneLineAndAPointer() {
        for (String[] args : new String[][] {{"generate", "--model", "m", "--prompt", "hi", "--temperature", "abc"},
                {"generate", "--model", "m"}, {"chat", "--model", "m", "--seed", "99999999999999999999"}}) {
            Run r = moe(args);
            assertThat(r.exit()).as(r.err()).isEqualTo(2);
            assertThat(r.err()).as(r.err()).startsWith("moe: ").contains("--help lists its options")
                    .doesNotContain("Usage:");
            assertThat(r.err().strip().lines().count()).as(r.err()).isLessThanOrEqualTo(3);
        }
    }

    @Test
    void modelOptionsOutOfRangeAreNamedAsWritten() {
        String[][] cases = {{"--context", "-1"}, {"--threads", "0"}, {"--gpus", "0"}};
        for (String[] c : cases) {
            Run r = moe("generate", "--model", "no-such-model", "--prompt", "hi", c[0], c[1]);
            assertThat(r.exit()).as(r.err()).isEqualTo(1);
            assertThat(r.err().strip()).startsWith("moe: " + c[0] + " must be").contains(c[1])
                    .doesNotContain("\n").doesNotContain("Exception");
        }
    }

    @Test
    void samplingFlagsOutOfRangeAreRefusedBeforeTheModelLoads() {
        String[][] cases = {{"--max-tokens", "0"}, {"--temperature", "-1"}, {"--top-k", "-2"}, {"--top-p", "0"},
                {"--top-p", "1.5"}, {"--min-p", "2"}, {"--stop", ""}};
        for (String command : List.of("generate", "chat")) {
            for (String[] c : cases) {
                Run r = command.equals("generate") ? moe(command, "--model", "no-such-model", "--prompt", "hi", c[0], c[1])
                        : moe(command, "--model", "no-such-model", c[0], c[1]);
                assertThat(r.exit()).as(r.err()).isEqualTo(1);
                assertThat(r.err().strip()).as(command).startsWith("moe: " + c[0] + " must be").doesNotContain("\n");
            }
        }
    }

    @Test
    void aModelPathThatDoesNotExistSaysSo() {
        Run r = moe("backends", "--model", "/no/such/model");
        assertThat(r.out() + r.err()).contains("/no/such/model: no such file or directory")
                .doesNotContain("/config.json");
    }

    @Test
    void optionsThatWouldBeIgnoredOrMeaninglessAreRefused() {
        Run system = moe("generate", "--model", "no-such-model", "--prompt", "hi", "--system", "be brief");
        assertThat(system.exit()).isEqualTo(1);
        assertThat(system.err().strip()).isEqualTo("moe: --system needs --chat (a raw prompt has no system message)");
        Run grace = moe("serve", "--model", "toy", "--shutdown-grace", "-5");
        assertThat(grace.exit()).isEqualTo(1);
        assertThat(grace.err().strip()).startsWith("moe: --shutdown-grace must be 0 or more");
    }

    @Test
    void gpusOnAnotherBackendIsAOneLineError() {
        for (String sub : List.of("generate", "chat", "serve")) {
            assertThat(moe(sub, "--help").out()).as(sub).contains("--gpus=");
        }
        Run r = moe("generate", "--model", "no-such-model", "--prompt", "hi", "--backend", "cpu", "--gpus", "2");
        assertThat(r.exit()).isNotZero();
        assertThat(r.err().strip()).startsWith("moe: ").contains("--gpus 2").contains("needs --backend cuda, not cpu")
                .doesNotContain("\n").doesNotContain("Exception");
    }
}

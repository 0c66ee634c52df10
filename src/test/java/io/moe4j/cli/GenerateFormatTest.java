package io.moe4j.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.testing.RandomModels;
import io.moe4j.testing.SchemaCheck;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code moe generate --regex | --choice | --json-schema} on a random Qwen3-MoE with its real tokenizer: random
 * weights write gibberish, so a reply that matches can only come from the constraint ({@link Pattern} judges).
 */
class GenerateFormatTest {
    @TempDir
    static Path tmp;
    static String model;

    @BeforeAll
    static void write() {
        model = RandomModels.qwen3(tmp.resolve("qwen3"), 9).toString();
    }

    private static CliTest.Run generate(String... more) {
        List<String> args = new java.util.ArrayList<>(List.of("generate", "--model", model, "--prompt", "Say it:",
                "--temperature", "1", "--max-tokens", "24", "--threads", "2", "--no-warmup"));
        args.addAll(List.of(more));
        return CliTest.moe(args.toArray(String[]::new));
    }

    /** The answer of a chat reply: after the reasoning's marks when there was reasoning. */
    private static String answer(String out) {
        int at = out.lastIndexOf("[answer]");
        return (at >= 0 ? out.substring(at + "[answer]".length()) : out).strip();
    }

    @Test
    void choicesAndExpressionsHoldTheReply() {
        for (int seed = 1; seed <= 3; seed++) {
            CliTest.Run r = generate("--seed", Integer.toString(seed), "--choice", "yes", "--choice", "no",
                    "--choice", "peut-être");
            assertThat(r.exit()).as(r.err()).isZero();
            assertThat(r.out().strip()).isIn("yes", "no", "peut-être");
            assertThat(r.err()).contains("finish: stop");
            CliTest.Run chat = generate("--seed", Integer.toString(seed), "--chat", "--regex", "[A-Z][a-z]{2,6}!");
            assertThat(chat.exit()).as(chat.err()).isZero();
            assertThat(Pattern.compile("[A-Z][a-z]{2,6}!").matcher(answer(chat.out())).matches()).as(chat.out())
                    .isTrue();
        }
    }

    @Test
    void aSchemaFromAFileOrInline() throws Exception {
        String schema = """
                {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
                 "additionalProperties": false}""";
        Path file = Files.writeString(tmp.resolve("schema.json"), schema);
        ObjectMapper json = new ObjectMapper();
        for (String given : List.of(file.toString(), schema)) {
            CliTest.Run r = generate("--seed", "4", "--json-schema", given);
            assertThat(r.exit()).as(r.err()).isZero();
            assertThat(SchemaCheck.errors(json.readTree(schema), json.readTree(r.out().strip()))).as(r.out())
                    .isEmpty();
        }
    }

    @Test
    void badFormatsAreOneLineNamingTheFlag() {
        String[][] cases = {{"--regex", "a(?=b)", "'--regex'"}, {"--json-schema", "nope.json", "--json-schema"},
                {"--json-schema", "{\"type\": \"object\", \"not\": {}}", "not"}};
        for (String[] c : cases) {
            CliTest.Run r = generate(c[0], c[1]);
            assertThat(r.exit()).as(r.err()).isEqualTo(1);
            assertThat(r.err().strip()).contains(c[2]).doesNotContain("\n").doesNotContain("Exception");
        }
        CliTest.Run both = generate("--regex", "a", "--choice", "b");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("mutually exclusive");
        CliTest.Run tight = CliTest.moe("generate", "--model", model, "--prompt", "x", "--max-tokens", "2",
                "--threads", "2", "--no-warmup", "--choice", "a long answer here");
        assertThat(tight.exit()).as(tight.err()).isEqualTo(1);
        assertThat(tight.err()).contains("needs at least");
    }
}

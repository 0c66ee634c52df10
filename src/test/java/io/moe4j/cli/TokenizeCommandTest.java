package io.moe4j.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code moe tokenize} over every line of the tokenizer fixtures' expected.jsonl, per tokenizer. */
class TokenizeCommandTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void everyExpectedLineComesOutOfTheCommand(String tokenizer, @TempDir Path tmp) throws IOException {
        List<JsonNode> expected = new ArrayList<>();
        List<String> input = new ArrayList<>();
        for (String line : Files.readAllLines(RandomModels.sharedTokenizers().resolve("expected.jsonl"))) {
            JsonNode n = JSON.readTree(line);
            if (!n.path("tokenizer").asText().equals(tokenizer)) {
                continue;
            }
            ObjectNode in = n.deepCopy();
            for (String key : List.of("tokenizer", "kind", "ids", "decoded")) {
                in.remove(key);
            }
            if (n.path("kind").asText().equals("chat")) {
                in.remove("text");
            }
            expected.add(n);
            input.add(JSON.writeValueAsString(in));
        }
        assertThat(expected).isNotEmpty();
        Path in = tmp.resolve("in.jsonl");
        Path out = tmp.resolve("out.jsonl");
        Files.write(in, input);
        int code = MoeCommand.execute("tokenize", "--model", RandomModels.sharedTokenizers().resolve(tokenizer).toString(),
                "--input", in.toString(), "--output", out.toString());
        assertThat(code).isZero();
        List<String> got = Files.readAllLines(out);
        assertThat(got).hasSameSizeAs(expected);
        for (int i = 0; i < got.size(); i++) {
            JsonNode g = JSON.readTree(got.get(i));
            JsonNode e = expected.get(i);
            assertThat(g.get("ids")).as("ids of line %d", i).isEqualTo(e.get("ids"));
            if (e.path("kind").asText().equals("chat")) {
                assertThat(g.path("text").asText()).as("text of line %d", i).isEqualTo(e.get("text").asText());
            }
        }
    }

    @Test
    void aBadLineIsNamed(@TempDir Path tmp) throws IOException {
        Path in = tmp.resolve("in.jsonl");
        Files.writeString(in, "{\"text\": \"ok\"}\n{\"nope\": 1}\n");
        int code = MoeCommand.execute("tokenize", "--model", RandomModels.sharedTokenizers().resolve("qwen3").toString(),
                "--input", in.toString(), "--output", tmp.resolve("out.jsonl").toString());
        assertThat(code).isEqualTo(1);
        try (var files = Files.list(tmp)) {
            assertThat(files.map(f -> f.getFileName().toString())).as("no output, partial or not")
                    .containsExactly("in.jsonl");
        }
    }

    /** A tool without a description renders as the server renders it (gpt-oss's template alone would fail). */
    @Test
    void aToolWithoutDescriptionRendersAsServed() throws IOException {
        String line = "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"add_generation_prompt\": true, "
                + "\"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
                + "{\"type\": \"object\", \"properties\": {}}}}]}\n";
        CliTest.Run r = CliTest.moeWithInput(line, "tokenize", "--model",
                RandomModels.sharedTokenizers().resolve("gpt-oss").toString(), "--input", "-", "--output", "-");
        assertThat(r.exit()).as(r.err()).isZero();
        assertThat(new ObjectMapper().readTree(r.out()).get("text").asText()).contains("// \ntype f = () => any;");
    }

    /** '-' reads standard input and writes standard output; a file already there is replaced only when done. */
    @Test
    void standardStreamsAndAnOutputReplacedWhole(@TempDir Path tmp) throws IOException {
        String qwen = RandomModels.sharedTokenizers().resolve("qwen3").toString();
        CliTest.Run piped = CliTest.moeWithInput("{\"text\": \"Hello world\"}\n{\"text\": \"ok\"}\n",
                "tokenize", "--model", qwen, "--input", "-", "--output", "-");
        assertThat(piped.exit()).as(piped.err()).isZero();
        Path in = tmp.resolve("in.jsonl");
        Files.writeString(in, "{\"text\": \"Hello world\"}\n{\"text\": \"ok\"}\n");
        Path out = tmp.resolve("out.jsonl");
        assertThat(CliTest.moe("tokenize", "--model", qwen, "--input", in.toString(), "--output", out.toString())
                .exit()).isZero();
        assertThat(piped.out()).isEqualTo(Files.readString(out));
        assertThat(piped.out().lines()).hasSize(2);
        assertThat(piped.err()).contains("2 lines → standard output");

        Files.writeString(in, "{\"text\": \"ok\"}\n{\"nope\": 1}\n");
        CliTest.Run failed = CliTest.moe("tokenize", "--model", qwen, "--input", in.toString(), "--output",
                out.toString());
        assertThat(failed.exit()).isEqualTo(1);
        assertThat(Files.readString(out)).as("the earlier output is left as it was").isEqualTo(piped.out());
        CliTest.Run badStdin = CliTest.moeWithInput("{\"nope\": 1}\n", "tokenize", "--model", qwen, "--input", "-",
                "--output", "-");
        assertThat(badStdin.err()).contains("standard input line 1");
    }

    /** Files that cannot be read or written, and a chat line the template refuses: one line naming them, exit 1. */
    @Test
    void unreadableFilesAndRefusedChatLinesAreNamedInOneLine(@TempDir Path tmp) throws IOException {
        Path good = tmp.resolve("in.jsonl");
        Files.writeString(good, "{\"text\": \"ok\"}\n");
        Path chat = tmp.resolve("chat.jsonl");
        Files.writeString(chat, "{\"text\": \"ok\"}\n{\"messages\": []}\n");
        Path out = tmp.resolve("out.jsonl");
        String[][] cases = {
                {tmp.resolve("missing.jsonl").toString(), out.toString(), "missing.jsonl: no such file or directory"},
                {tmp.toString(), out.toString(), tmp + ": is a directory"},
                {good.toString(), tmp.resolve("no/dir/out.jsonl").toString(), "out.jsonl: no such file or directory"},
                {chat.toString(), out.toString(), chat + " line 2: "}};
        for (String[] c : cases) {
            CliTest.Run r = CliTest.moe("tokenize", "--model",
                    RandomModels.sharedTokenizers().resolve("qwen3").toString(), "--input", c[0], "--output", c[1]);
            String said = r.err().strip();
            assertThat(r.exit()).as(said).isEqualTo(1);
            assertThat(said).startsWith("moe: ").contains(c[2]).doesNotContain("\tat ").doesNotContain("Exception");
            assertThat(said.lines()).hasSize(1);
        }
    }
}

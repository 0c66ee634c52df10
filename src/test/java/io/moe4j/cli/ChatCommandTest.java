package io.moe4j.cli;

import io.moe4j.generate.MoeModel;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.BufferedReader;
import java.io.PrintWriter;
import java.io.StringReader;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** The chat loop prompts a person at a terminal with "> ", and writes only the answers into a pipe. */
class ChatCommandTest {
    @TempDir
    Path tmp;

    private static String chat(MoeModel model, boolean prompts) throws Exception {
        ChatCommand command = new ChatCommand();
        new CommandLine(command).parseArgs("--model", "unused", "--max-tokens", "3", "--temperature", "0");
        StringWriter out = new StringWriter();
        command.run(model, new BufferedReader(new StringReader("Hi!\n/nope\nAnd then?\n")), new PrintWriter(out),
                new PrintWriter(new StringWriter()), new AtomicBoolean(), prompts);
        return out.toString();
    }

    @Test
    void promptsOnlyAtATerminal() throws Exception {
        try (MoeModel model = MoeModel.load(RandomModels.qwen3(tmp.resolve("qwen3"), 5),
                ModelOptions.defaults().withThreads(2))) {
            String atTerminal = chat(model, true);
            String piped = chat(model, false);
            assertThat(atTerminal).startsWith("> ");
            assertThat(atTerminal.split("> ", -1)).hasSize(5);   // two turns, the unknown command, the end of input
            assertThat(piped).doesNotContain("> ");
            // the same answers, one line each
            assertThat(atTerminal.replace("> ", "").strip()).isEqualTo(piped.strip());
        }
    }
}

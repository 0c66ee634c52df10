package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.serve.ServedModel;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ServeCommandTest {

    private static ServeCommand parse(String... args) {
        ServeCommand cmd = new ServeCommand();
        new CommandLine(cmd).parseArgs(args);
        return cmd;
    }

    @Test
    void optionsAndDefaults() {
        ServeCommand cmd = parse("--model", "toy", "--port", "0", "--max-sequences", "8", "--api-key", "k");
        assertThat(cmd.host).isEqualTo("127.0.0.1");
        assertThat(cmd.port).isZero();
        assertThat(cmd.maxSequences).isEqualTo(8);
        assertThat(cmd.maxQueue).isEqualTo(64);
        assertThat(cmd.apiKey).isEqualTo("k");
        ServedModel served = cmd.load();
        assertThat(served.id()).isEqualTo("toy");
        assertThat(served.model().contextLength()).isEqualTo(4096);
    }

    @Test
    void aMissingModelDirectoryIsNamed() {
        ServeCommand cmd = parse("--model", "/models/no-such-model");
        assertThatThrownBy(cmd::load).isInstanceOf(MoeException.class)
                .hasMessageContaining("/models/no-such-model");
    }

    @Test
    void modelIsRequired() {
        assertThatThrownBy(() -> parse("--port", "1")).isInstanceOf(CommandLine.MissingParameterException.class);
    }
}

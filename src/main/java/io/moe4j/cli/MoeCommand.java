package io.moe4j.cli;

import io.moe4j.MoeException;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

/** The {@code moe} command: its subcommands are the engine's user interface. */
@Command(name = "moe",
        mixinStandardHelpOptions = true,
        versionProvider = MoeCommand.Version.class,
        description = "Mixture-of-Experts models from their real quantized checkpoints, on the JVM: chat, generate"
                + " and serve them; run, time and inspect their layers.",
        subcommands = {DemoCommand.class, GenerateCommand.class, ChatCommand.class, ServeCommand.class, TokenizeCommand.class, InspectCommand.class, ForwardCommand.class, BackendsCommand.class,
                BenchCommand.class, LogitsCommand.class, PerplexityCommand.class,
                CommandLine.HelpCommand.class})
public final class MoeCommand implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        // no command: a usage error (picocli prints the reason and the usage on stderr, exit 2)
        throw new CommandLine.ParameterException(spec.commandLine(), "Missing a command: one of "
                + String.join(", ", spec.commandLine().getSubcommands().keySet()));
    }

    public static void main(String[] args) {
        System.exit(execute(args));
    }

    /** Runs the command line; user errors become one line on stderr and exit code 1, never a stack trace. */
    public static int execute(String... args) {
        CommandLine cli = new CommandLine(new MoeCommand());
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            if (ex instanceof MoeException || ex instanceof IllegalArgumentException) {
                commandLine.getErr().println("moe: " + ex.getMessage());
                return 1;
            }
            throw ex;
        });
        cli.setParameterExceptionHandler((ex, given) -> {
            // a mistyped flag: the reason and where to look, not the whole usage (which the bare command still gets)
            CommandLine at = ex.getCommandLine();
            java.io.PrintWriter err = at.getErr();
            err.println("moe: " + ex.getMessage());
            CommandLine.UnmatchedArgumentException.printSuggestions(ex, err);
            if (at.getCommandSpec() == cli.getCommandSpec()) {
                at.usage(err);
            } else {
                err.println("(moe " + at.getCommandName() + " --help lists its options)");
            }
            return at.getCommandSpec().exitCodeOnInvalidInput();
        });
        return cli.execute(args);
    }

    static final class Version implements CommandLine.IVersionProvider {
        @Override
        public String[] getVersion() throws IOException {
            Properties p = new Properties();
            try (InputStream in = MoeCommand.class.getResourceAsStream("/io/moe4j/version.properties")) {
                if (in != null) {
                    p.load(in);
                }
            }
            return new String[] {"moe4j " + p.getProperty("version", "unknown") + " (Java " + Runtime.version() + ")"};
        }
    }
}

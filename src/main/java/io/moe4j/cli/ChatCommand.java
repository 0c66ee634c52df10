package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.generate.Conversation;
import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.GenerationResult;
import io.moe4j.generate.MoeModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * {@code moe chat}: an interactive multi-turn chat on the model's chat format. The KV cache carries over between
 * turns; Ctrl-C stops the answer being written, not the program; {@code /reset} starts over, {@code /exit} or
 * end of input leaves.
 */
@Command(name = "chat", mixinStandardHelpOptions = true,
        description = "Chat with a model interactively (/reset starts over, /exit or Ctrl-D leaves, Ctrl-C stops an answer).")
final class ChatCommand implements Callable<Integer> {
    @Mixin
    ModelArgs modelArgs;

    @Mixin
    SamplingArgs sampling;

    @Option(names = "--system", description = "a system message that opens the conversation")
    String system;

    @Option(names = "--raw", description = "show the model's text as it is, without splitting reasoning from the answer")
    boolean raw;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        sampling.check();
        try (MoeModel model = modelArgs.loadWarmedUp()) {
            AtomicBoolean interrupted = new AtomicBoolean();
            Runnable restore = Interrupts.onCtrlC(() -> interrupted.set(true));
            try {
                // the "> " prompt is for a person at a terminal; piped input gets the answers alone
                run(model, in, out, err, interrupted, System.console() != null);
            } finally {
                restore.run();
            }
        }
        return 0;
    }

    void run(MoeModel model, BufferedReader in, PrintWriter out, PrintWriter err, AtomicBoolean interrupted,
             boolean prompts) throws IOException {
        Conversation chat = newConversation(model);
        while (true) {
            if (prompts) {
                out.print("> ");
                out.flush();
            }
            String line = in.readLine();
            if (line == null || line.strip().equals("/exit")) {
                if (prompts) {
                    out.println();
                }
                out.flush();
                chat.close();
                return;
            }
            if (line.strip().equals("/reset")) {
                chat.close();
                chat = newConversation(model);
                out.println("(a new conversation)");
                continue;
            }
            if (line.isBlank()) {
                continue;
            }
            if (line.strip().matches("/[A-Za-z]+")) {
                // a command word, not a message: the model is not asked
                err.println("moe: unknown command " + line.strip() + "; /reset starts a new conversation, /exit ends");
                err.flush();
                continue;
            }
            GenerationRequest request = sampling.request(model);
            interrupted.set(false);
            OutputView view = OutputView.of(model, !raw, out);
            GenerationResult r;
            try {
                r = chat.say(line, request, (text, ends) -> view.accept(text, ends), interrupted::get);
            } catch (MoeException | IllegalArgumentException e) {
                // the turn was not taken (a message beyond the context, say): the conversation goes on
                view.finish();
                out.println();
                out.flush();
                err.println("moe: " + e.getMessage() + " (the turn was not taken; /reset starts a new conversation)");
                err.flush();
                continue;
            }
            view.finish();
            out.println();
            out.flush();
            if (view.hiddenNote() != null) {
                err.println(view.hiddenNote());
            }
            err.printf("(%d prompt tokens, %d from the cache; %d generated at %s tokens/s; %s)%n",
                    r.promptTokens() + chat.reusedLastTurn(), chat.reusedLastTurn(), r.tokens().length,
                    r.decodeRateText(), r.finishReason().apiName());
            err.flush();
        }
    }

    private Conversation newConversation(MoeModel model) {
        Conversation c = model.newConversation();
        if (system != null) {
            c.system(system);
        }
        return c;
    }
}

package io.moe4j.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.GenerationResult;
import io.moe4j.generate.Generator;
import io.moe4j.generate.MoeModel;
import io.moe4j.model.Session;
import io.moe4j.text.chat.ChatRequest;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

/** {@code moe generate}: one prompt in, the model's text streamed out, then one line of figures. */
@Command(name = "generate", mixinStandardHelpOptions = true,
        description = "Generate text after a prompt (or a chat message with --chat), streaming it as it comes.")
final class GenerateCommand implements Callable<Integer> {
    @Mixin
    ModelArgs modelArgs;

    @Mixin
    SamplingArgs sampling;

    @Option(names = "--prompt", required = true, description = "the prompt text (the user message with --chat)")
    String prompt;

    @Option(names = "--chat", description = "render the prompt as a user message with the model's chat template")
    boolean chat;

    @Option(names = "--system", description = "a system message (with --chat)")
    String system;

    @Option(names = "--raw", description = "show the model's text as it is, without splitting reasoning from the answer")
    boolean raw;

    @Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        if (system != null && !chat) {
            throw new IllegalArgumentException("--system needs --chat (a raw prompt has no system message)");
        }
        sampling.check();
        try (MoeModel model = modelArgs.load(); Session session = model.model().newSession()) {
            int[] ids;
            if (chat) {
                ArrayNode messages = JsonNodeFactory.instance.arrayNode();
                if (system != null) {
                    messages.addObject().put("role", "system").put("content", system);
                }
                messages.addObject().put("role", "user").put("content", prompt);
                ids = model.encodeChat(ChatRequest.of(messages, true));
            } else {
                ids = model.tokenizer().encodePrompt(prompt);
            }
            GenerationRequest request = sampling.request(model);
            OutputView view = OutputView.of(model, chat && !raw, out);
            GenerationResult r = new Generator(model.tokenizer()).generate(session, ids, request, view::accept,
                    () -> false);
            view.finish();
            out.println();
            out.flush();
            if (view.hiddenNote() != null) {
                err.println("moe: " + view.hiddenNote());
            }
            err.printf("moe: %d prompt tokens, %.1f tokens/s prefill; %d generated, %s tokens/s decode; finish: %s%n",
                    r.promptTokens(), r.prefillTokensPerSecond(), r.tokens().length, r.decodeRateText(),
                    r.finishReason().apiName());
            err.flush();
        }
        return 0;
    }
}

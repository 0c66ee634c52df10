package io.moe4j.cli;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.MoeException;
import io.moe4j.generate.ChatOutputs;
import io.moe4j.generate.GenerationRequest;
import io.moe4j.generate.GenerationResult;
import io.moe4j.generate.Generator;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.constraint.AnswerGrammar;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.generate.constraint.TextGrammar;
import io.moe4j.generate.constraint.TokenTrie;
import io.moe4j.model.Session;
import io.moe4j.text.chat.ChatRequest;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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

    @ArgGroup(exclusive = true)
    ReplyFormat format;

    /** What the reply (with --chat, its answer after the reasoning) is held to by constrained decoding. */
    static final class ReplyFormat {
        @Option(names = "--regex", description = "hold the reply to a regular expression, matched whole (ECMA-262's "
                + "regular subset)")
        String regex;

        @Option(names = "--choice", description = "hold the reply to one of these strings (repeat the option)")
        List<String> choices;

        @Option(names = "--json-schema", description = "hold the reply to JSON that fits this schema: a file, or "
                + "the schema's JSON text")
        String jsonSchema;

        /** The grammar, a JSON schema's fixed pieces reckoned in {@code trie}'s tokens (bytes where null). */
        AnswerGrammar grammar(TokenTrie trie) {
            if (regex != null) {
                return TextGrammar.regex(regex, "--regex");
            }
            if (choices != null) {
                return TextGrammar.choice(choices, "--choice");
            }
            return trie == null ? JsonGrammar.of(schema()) : JsonGrammar.of(schema(), trie);
        }

        private JsonNode schema() {
            String text = jsonSchema;
            if (!jsonSchema.strip().startsWith("{")) {
                Path file = Path.of(jsonSchema);
                if (!Files.isRegularFile(file)) {
                    throw new MoeException("--json-schema: " + jsonSchema + " is neither a file nor a JSON object");
                }
                try {
                    text = Files.readString(file);
                } catch (IOException e) {
                    throw new MoeException("--json-schema: cannot read " + file + ": " + e.getMessage(), e);
                }
            }
            try {
                return new ObjectMapper().readTree(text);
            } catch (IOException e) {
                throw new MoeException("--json-schema: not JSON: " + e.getMessage(), e);
            }
        }
    }

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
        // a format that cannot be read or compiled is refused before the model loads
        AnswerGrammar checked = format == null ? null : format.grammar(null);
        try (MoeModel model = modelArgs.load(); Session session = model.model().newSession()) {
            int[] ids;
            String chatText = null;
            if (chat) {
                ArrayNode messages = JsonNodeFactory.instance.arrayNode();
                if (system != null) {
                    messages.addObject().put("role", "system").put("content", system);
                }
                messages.addObject().put("role", "user").put("content", prompt);
                chatText = model.renderChat(ChatRequest.of(messages, true));
                ids = model.tokenizer().encode(chatText);
            } else {
                ids = model.tokenizer().encodePrompt(prompt);
            }
            GenerationRequest request = sampling.request(model);
            ReplyConstraint constraint = null;
            if (format != null) {
                ChatOutputs outputs = model.chatOutputs();
                AnswerGrammar grammar = checked instanceof JsonGrammar ? format.grammar(outputs.trie()) : checked;
                constraint = chat ? outputs.constraint(chatText, grammar, request.maxTokens())
                        : outputs.answerOnly(grammar);
            }
            OutputView view = OutputView.of(model, chat && !raw, out);
            GenerationResult r = new Generator(model.tokenizer()).generate(session, ids, request,
                    (text, ends) -> view.accept(text, ends), () -> false, constraint);
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

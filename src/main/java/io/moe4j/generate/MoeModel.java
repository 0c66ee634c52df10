package io.moe4j.generate;

import com.fasterxml.jackson.databind.JsonNode;
import io.moe4j.MoeException;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.model.GenerationConfig;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.text.chat.ChatRequest;
import io.moe4j.text.chat.ChatTemplate;
import io.moe4j.text.tokenizer.Tokenizer;
import io.moe4j.text.tools.ToolCallIds;
import io.moe4j.text.tools.ToolChoice;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * A model directory as a user has it, ready to talk to: the decoder, its tokenizer, its chat template (when it
 * ships one) and the ids that end a sequence. The library's entry point for text in, text out:
 * <pre>{@code
 * try (MoeModel m = MoeModel.load(dir, ModelOptions.defaults())) {
 *     Conversation chat = m.newConversation();
 *     chat.say("Hello!", m.defaultRequest(256), System.out::print, () -> false);
 * }
 * }</pre>
 */
public final class MoeModel implements AutoCloseable {
    private final Path dir;
    private final Model model;
    private final Tokenizer tokenizer;
    private final ChatTemplate template;
    private final Set<Integer> eosIds;
    private ChatOutputs chatOutputs;

    private MoeModel(Path dir, Model model, Tokenizer tokenizer, ChatTemplate template, Set<Integer> eosIds) {
        this.dir = dir;
        this.model = model;
        this.tokenizer = tokenizer;
        this.template = template;
        this.eosIds = eosIds;
    }

    /** Loads the weights, the tokenizer and (when present) the chat template of the model in {@code dir}. */
    public static MoeModel load(Path dir, ModelOptions options) {
        if (!Files.exists(dir)) {
            throw new MoeException(dir + ": no such directory");
        }
        if (!Files.isDirectory(dir)) {
            throw new MoeException(dir + ": not a model directory (a model is a directory with config.json)");
        }
        if (!Files.isRegularFile(dir.resolve("config.json"))) {
            // named first: a directory without config.json is no model, whatever else it lacks
            throw new MoeException(dir + ": no config.json, so not a model directory");
        }
        Tokenizer tokenizer = Tokenizer.load(dir);
        ChatTemplate template = ChatTemplate.find(dir).orElse(null);
        Model model = Model.load(dir, options);
        try {
            if (tokenizer.vocabSize() > model.config().vocab()) {
                // ids past the embedding table would fail only at the first prompt that uses them
                throw new MoeException(dir.resolve("tokenizer.json") + ": " + tokenizer.vocabSize() + " tokens, more than"
                        + " the model's vocab_size of " + model.config().vocab() + " (config.json): not this model's"
                        + " tokenizer");
            }
            Set<Integer> eos = new LinkedHashSet<>(model.generationConfig().eosTokenIds());
            tokenizer.eosId().ifPresent(eos::add);
            return new MoeModel(dir, model, tokenizer, template, Set.copyOf(eos));
        } catch (RuntimeException e) {
            model.close();
            throw e;
        }
    }

    public Path directory() {
        return dir;
    }

    public Model model() {
        return model;
    }

    public Tokenizer tokenizer() {
        return tokenizer;
    }

    public Optional<ChatTemplate> chatTemplate() {
        return Optional.ofNullable(template);
    }

    /** Every id that ends a sequence: generation_config.json's, config.json's and the tokenizer's eos. */
    public Set<Integer> eosIds() {
        return eosIds;
    }

    public GenerationConfig generationConfig() {
        return model.generationConfig();
    }

    /**
     * A request with the checkpoint authors' sampling defaults (generation_config.json: do_sample, temperature,
     * top_k, top_p, min_p), greedy where they do not sample, and this model's eos ids.
     */
    public GenerationRequest defaultRequest(int maxTokens) {
        GenerationConfig g = model.generationConfig();
        SamplingParams sampling = !g.doSample() ? SamplingParams.greedy() : new SamplingParams(
                g.temperature() == null ? 1.0 : g.temperature(), g.topK() == null ? 0 : g.topK(),
                g.topP() == null ? 1.0 : g.topP(), g.minP() == null ? 0 : g.minP(), System.nanoTime());
        if (g.repetitionPenalty() != null && g.repetitionPenalty() != 1) {
            // a logits processor in transformers, greedy or not
            sampling = sampling.withAdjustments(LogitAdjustments.NONE.withRepetitionPenalty(g.repetitionPenalty()));
        }
        return new GenerationRequest(maxTokens, sampling, java.util.List.of(), eosIds);
    }

    /** The prompt ids of a chat request rendered with this model's template. */
    public int[] encodeChat(ChatRequest request) {
        return tokenizer.encode(renderChat(request));
    }

    /** A chat request rendered with this model's template: the prompt's text. */
    public String renderChat(ChatRequest request) {
        if (template == null) {
            throw new MoeException(dir + ": the model ships no chat template (tokenizer_config.json has no"
                    + " chat_template and there is no chat_template.jinja)");
        }
        return template.render(request);
    }

    /** Generates after a plain-text prompt in a fresh session. */
    public GenerationResult complete(String prompt, GenerationRequest request, Consumer<String> onText,
                                     BooleanSupplier cancelled) {
        try (Session session = model.newSession()) {
            return new Generator(tokenizer).generate(session, tokenizer.encodePrompt(prompt), request, onText,
                    cancelled);
        }
    }

    /** Reading and shaping this model's chat replies (reply format, tool calls, the constraint trie); shared. */
    public synchronized ChatOutputs chatOutputs() {
        if (chatOutputs == null) {
            chatOutputs = new ChatOutputs(tokenizer, model.config().family(), model.vocabSize(), eosIds);
        }
        return chatOutputs;
    }

    /**
     * Generates one chat turn with tools, tool choice and response format in a fresh session: the reply's events
     * (answer, reasoning, tool calls) reach {@code onEvent} as they are read, and the whole reply is returned.
     *
     * @throws MoeException for a schema or tool choice that cannot constrain the answer, or a budget too small
     */
    public ChatReply chat(ChatGeneration chat, Consumer<ReplyReader.Event> onEvent, BooleanSupplier cancelled) {
        if (template == null) {
            throw new MoeException(dir + ": the model ships no chat template, so it cannot chat");
        }
        ChatRequest request = new ChatRequest(chat.messages(), true, chat.tools(), chat.templateArguments(), null);
        String prompt = template.render(request);
        ChatOutputs outputs = chatOutputs();
        JsonNode forced = chat.toolChoice().schema(chat.tools());
        JsonGrammar grammar = forced != null
                ? JsonGrammar.of(forced, outputs.trie())
                : chat.responseFormat().grammar();
        ReplyConstraint constraint = grammar == null ? null
                : outputs.constraint(prompt, grammar, chat.request().maxTokens());
        boolean callsAsJson = forced != null;
        ReplyReader reader = outputs.reader(prompt, chat.toolChoice() instanceof ToolChoice.Auto,
                callsAsJson, ToolCallIds.random()).markersFromTokens();
        try (Session session = model.newSession()) {
            GenerationResult result = new Generator(tokenizer).generate(session, tokenizer.encode(prompt),
                    chat.request(), (text, ends) -> reader.feed(text, ends).forEach(onEvent), cancelled, constraint);
            reader.finish().forEach(onEvent);
            return new ChatReply(reader.answer(), reader.reasoning(), reader.toolCalls(), result);
        }
    }

    /** A multi-turn chat that keeps its KV cache between turns. */
    public Conversation newConversation() {
        return new Conversation(this);
    }

    @Override
    public void close() {
        model.close();
    }
}

package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeType;
import io.moe4j.MoeException;
import io.moe4j.generate.LogitAdjustments;
import io.moe4j.generate.ReplyOptions;
import io.moe4j.generate.SamplingParams;
import io.moe4j.generate.TokenLogprobs;
import io.moe4j.generate.constraint.AnswerGrammar;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.generate.constraint.ResponseFormat;
import io.moe4j.generate.constraint.TokenTrie;
import io.moe4j.text.tools.ToolChoice;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Checks an OpenAI request body field by field and builds an {@link ApiRequest}; every refusal is an
 * {@link ApiError} that names the field. Fields this server does not act on are refused when they ask for something
 * (best_of, suffix), so a client never gets an answer that silently ignored them;
 * fields that only describe the caller (user, metadata, store) are accepted and ignored.
 */
final class RequestParser {
    static final int MAX_STOPS = 16;
    /**
     * vLLM's request extensions not served here; each is refused unless it asks for nothing (absent, null, false,
     * empty or 0), so that no reply silently ignores it.
     */
    private static final List<String> UNSERVED_EXTENSIONS = List.of("allowed_token_ids", "bad_words",
            "include_stop_str_in_output", "return_tokens_as_token_ids", "use_beam_search",
            "length_penalty", "truncate_prompt_tokens", "guided_decoding_backend");

    /** The most prompts one completions request may send (each with its own choices: --max-queue bounds them all). */
    static final int MAX_PROMPTS = 1024;
    /** The most choices one request may ask for ({@code n}): each is a sequence of its own. */
    static final int MAX_CHOICES = 16;
    private static final Set<String> ROLES = Set.of("system", "developer", "user", "assistant", "tool");

    private RequestParser() {
    }

    static ApiRequest chat(JsonNode body) {
        return chat(body, SamplingDefaults.OPENAI);
    }

    /** A chat request; {@code defaults} fill the sampling fields it leaves out; a schema's budget in bytes. */
    static ApiRequest chat(JsonNode body, SamplingDefaults defaults) {
        return chat(body, defaults, null);
    }

    /**
     * A chat request; {@code defaults} fill the sampling fields it leaves out, and the grammar of a forced call or a
     * JSON response_format is compiled here, once, with its fixed pieces reckoned in {@code trie}'s tokens (bytes
     * where null).
     */
    static ApiRequest chat(JsonNode body, SamplingDefaults defaults, TokenTrie trie) {
        return chat(body, defaults, trie, Integer.MAX_VALUE);
    }

    /** {@link #chat(JsonNode, SamplingDefaults, TokenTrie)} for a model of {@code vocabSize} tokens (logit_bias ids). */
    static ApiRequest chat(JsonNode body, SamplingDefaults defaults, TokenTrie trie, int vocabSize) {
        requireObject(body);
        String model = requiredString(body, "model");
        JsonNode messagesNode = body.get("messages");
        if (messagesNode == null || messagesNode.isNull()) {
            throw ApiError.badRequest("'messages' is required", "messages");
        }
        if (!messagesNode.isArray() || messagesNode.isEmpty()) {
            throw ApiError.badRequest("'messages' must be a non-empty array of message objects", "messages");
        }
        List<ChatMessage> messages = new ArrayList<>();
        for (int i = 0; i < messagesNode.size(); i++) {
            messages.add(message(messagesNode.get(i), "messages[" + i + "]"));
        }
        JsonNode tools = body.get("tools");
        if (tools != null && !tools.isNull()) {
            checkTools(tools);
        } else {
            tools = null;
        }
        checkToolMessages(messagesNode);
        AnswerGrammar grammar = null;
        ToolChoice toolChoice;
        try {
            toolChoice = ToolChoice.parse(nullToNull(body.get("tool_choice")), tools);
            // A forced call's schema is built from the tools' parameters: a bad one is the tools' fault.
            JsonNode forced = toolChoice.schema(tools);
            if (forced != null) {
                try {
                    grammar = trie == null ? JsonGrammar.of(forced) : JsonGrammar.of(forced, trie);
                } catch (MoeException e) {
                    throw toolAtFault(tools, e);
                }
            }
        } catch (MoeException e) {
            throw ApiError.badRequest(e.getMessage(), fieldOf(e, "tool_choice"));
        }
        String grammarField = grammar != null ? "tool_choice" : null;
        JsonNode format = nullToNull(body.get("response_format"));
        GuidedDecoding guided = GuidedDecoding.read(body, trie);
        if (guided != null && grammar != null) {
            throw ApiError.badRequest("'" + guided.field() + "' and a forced tool call (tool_choice) each constrain "
                    + "the reply; send one", guided.field());
        }
        JsonGrammar formatGrammar = responseFormat(format, trie, guided);
        if (grammar == null && formatGrammar != null) {
            // a forced call wins over a response_format (its JSON is the call's)
            grammar = formatGrammar;
            grammarField = "response_format";
        }
        if (guided != null) {
            grammar = guided.grammar();
            grammarField = guided.field();
        }
        refuseNonNull(body, "audio");
        refuseNonNull(body, "prediction");
        JsonNode modalities = nullToNull(body.get("modalities"));
        if (modalities != null && (!modalities.isArray() || modalities.size() != 1
                || !modalities.get(0).asText().equals("text"))) {
            throw ApiError.badRequest("only the 'text' modality is supported", "modalities");
        }
        Integer maxTokens = optionalInt(body, "max_completion_tokens", 1);
        Integer legacyMax = optionalInt(body, "max_tokens", 1);
        return common(body, true, model, vocabSize, new ChatPrompt(messages, tools, templateArgs(body)), List.of(),
                maxTokens != null ? maxTokens : legacyMax, toolChoice, format, defaults, grammar, grammarField);
    }

    /**
     * The grammar of a JSON {@code response_format} (null for text or none); refused beside vLLM's guided decoding,
     * which would constrain the same reply.
     */
    private static JsonGrammar responseFormat(JsonNode format, TokenTrie trie, GuidedDecoding guided) {
        if (format == null) {
            return null;
        }
        ResponseFormat parsed;
        try {
            parsed = ResponseFormat.parse(format, trie);
        } catch (MoeException e) {
            throw ApiError.badRequest(e.getMessage(), fieldOf(e, "response_format"));
        }
        if (parsed.isConstrained() && guided != null) {
            throw ApiError.badRequest("'response_format' and '" + guided.field() + "' each constrain the reply; "
                    + "send one", guided.field());
        }
        return parsed.grammar();
    }

    /**
     * The 400 for a forced call whose schema does not compile: each tool's parameters on their own, so that the error
     * names the tool and the path in it (the forced call's schema wraps them in paths of its own).
     */
    private static ApiError toolAtFault(JsonNode tools, MoeException whole) {
        for (int i = 0; tools != null && i < tools.size(); i++) {
            JsonNode parameters = tools.get(i).path("function").get("parameters");
            if (parameters == null || parameters.isNull()) {
                continue;
            }
            try {
                JsonGrammar.of(parameters);
            } catch (MoeException e) {
                String at = "tools[" + i + "].function.parameters";
                return ApiError.badRequest("'tools' parameters cannot constrain a call: "
                        + e.getMessage().replace(" at $", " at " + at), at);
            }
        }
        return ApiError.badRequest("'tools' parameters cannot constrain a call: " + whole.getMessage(), "tools");
    }

    static ApiRequest completion(JsonNode body, int vocabSize) {
        return completion(body, vocabSize, SamplingDefaults.OPENAI);
    }

    /** A completion request; {@code defaults} fill the sampling fields it leaves out. */
    static ApiRequest completion(JsonNode body, int vocabSize, SamplingDefaults defaults) {
        return completion(body, vocabSize, defaults, null);
    }

    /**
     * A completion request; {@code defaults} fill the sampling fields it leaves out, and a grammar it asks for is
     * compiled here with a JSON schema's fixed pieces reckoned in {@code trie}'s tokens (bytes where null).
     */
    static ApiRequest completion(JsonNode body, int vocabSize, SamplingDefaults defaults, TokenTrie trie) {
        requireObject(body);
        String model = requiredString(body, "model");
        JsonNode prompt = body.get("prompt");
        if (prompt == null || prompt.isNull()) {
            throw ApiError.badRequest("'prompt' is required", "prompt");
        }
        List<CompletionPrompt> prompts = new ArrayList<>();
        if (prompt.isTextual()) {
            prompts.add(new CompletionPrompt(prompt.asText(), null));
        } else if (prompt.isArray() && !prompt.isEmpty() && (prompt.get(0).isTextual() || prompt.get(0).isArray())) {
            // a batch: strings, or arrays of token ids, each answered by n choices of its own
            if (prompt.size() > MAX_PROMPTS) {
                throw ApiError.badRequest("'prompt' holds " + prompt.size() + " prompts; at most " + MAX_PROMPTS
                        + " are served in one request", "prompt");
            }
            boolean texts = prompt.get(0).isTextual();
            for (int i = 0; i < prompt.size(); i++) {
                JsonNode one = prompt.get(i);
                String at = "prompt[" + i + "]";
                if (texts && one.isTextual()) {
                    prompts.add(new CompletionPrompt(one.asText(), null));
                } else if (!texts && one.isArray() && !one.isEmpty()) {
                    prompts.add(new CompletionPrompt(null, tokenIds(one, vocabSize, at)));
                } else {
                    throw ApiError.badRequest("'" + at + "' must be " + (texts ? "a string" : "a non-empty array of "
                            + "token ids") + ", as the first prompt is", "prompt");
                }
            }
        } else if (prompt.isArray() && !prompt.isEmpty()) {
            prompts.add(new CompletionPrompt(null, tokenIds(prompt, vocabSize, "prompt")));
        } else {
            throw ApiError.badRequest("'prompt' must be a string, an array of strings, an array of token ids or an "
                    + "array of such arrays", "prompt");
        }

        refuseNonNull(body, "suffix");
        // tools are served on /v1/chat/completions, where the chat template places them
        for (String field : List.of("tools", "tool_choice")) {
            if (nullToNull(body.get(field)) != null) {
                throw ApiError.badRequest("'" + field + "' is served on /v1/chat/completions, not on completions",
                        field);
            }
        }
        // a completion may be held to a grammar from its first token, as vLLM's completions are
        JsonNode format = nullToNull(body.get("response_format"));
        GuidedDecoding guided = GuidedDecoding.read(body, trie);
        AnswerGrammar grammar = responseFormat(format, trie, guided);
        String grammarField = grammar != null ? "response_format" : null;
        if (guided != null) {
            grammar = guided.grammar();
            grammarField = guided.field();
        }
        JsonNode bestOf = nullToNull(body.get("best_of"));
        if (bestOf != null && !(bestOf.isIntegralNumber() && bestOf.asLong() == 1)) {
            throw ApiError.badRequest("'best_of' must be 1", "best_of");
        }
        // 0 asks for the prompt alone (with echo), as evaluation harnesses score a text
        return common(body, false, model, vocabSize, null, prompts, optionalInt(body, "max_tokens", 0), null, format,
                defaults, grammar, grammarField);
    }

    private static ApiRequest common(JsonNode body, boolean isChat, String model, int vocabSize, ChatPrompt chat,
                                     List<CompletionPrompt> prompts, Integer maxTokens, ToolChoice toolChoice, JsonNode format,
                                     SamplingDefaults defaults, AnswerGrammar grammar, String grammarField) {
        // vLLM's other sampling extensions this server does not act on: refused when they ask for anything
        for (String field : UNSERVED_EXTENSIONS) {
            JsonNode v = nullToNull(body.get(field));
            boolean neutral = v == null || (v.isBoolean() && !v.booleanValue()) || (v.isArray() && v.isEmpty())
                    || (v.isNumber() && v.asDouble() == 0);
            if (!neutral) {
                throw ApiError.badRequest("'" + field + "' is not supported", field);
            }
        }
        if (!isChat && nullToNull(body.get("top_logprobs")) != null) {
            throw ApiError.badRequest("'top_logprobs' is a chat field; completions take 'logprobs' (how many top "
                    + "tokens)", "top_logprobs");
        }
        Integer n = optionalInt(body, "n", 1);
        if (n == null) {
            n = 1;
        }
        if (n > MAX_CHOICES) {
            throw ApiError.badRequest("'n' must be in [1, " + MAX_CHOICES + "], got " + n, "n");
        }
        double temperature = optionalNumber(body, "temperature", 0, 2, defaults.temperature());
        double topP = optionalNumber(body, "top_p", Double.NEGATIVE_INFINITY, Double.POSITIVE_INFINITY,
                defaults.topP());
        if (!(topP > 0 && topP <= 1)) {
            throw ApiError.badRequest("'top_p' must be in (0, 1], got " + body.get("top_p"), "top_p");
        }
        double minP = optionalNumber(body, "min_p", 0, 1, defaults.minP());
        Integer topK = optionalInt(body, "top_k", -1);
        if (body.get("top_k") == null || body.get("top_k").isNull()) {
            topK = defaults.topK();
        }
        double presence = optionalNumber(body, "presence_penalty", -2, 2, 0.0);
        double frequency = optionalNumber(body, "frequency_penalty", -2, 2, 0.0);
        // vLLM's extension; generation_config.json's value where the request has none, as vLLM reads it
        double repetition = optionalNumber(body, "repetition_penalty", Double.NEGATIVE_INFINITY,
                Double.POSITIVE_INFINITY, defaults.repetitionPenalty());
        if (!(repetition > 0) || Double.isInfinite(repetition)) {
            throw ApiError.badRequest("'repetition_penalty' must be a number > 0, got " + body.get("repetition_penalty"),
                    "repetition_penalty");
        }
        LogitAdjustments adjustments = new LogitAdjustments(presence, frequency, repetition,
                logitBias(nullToNull(body.get("logit_bias")), vocabSize));
        JsonNode seedNode = nullToNull(body.get("seed"));
        long seed;
        if (seedNode == null) {
            seed = ThreadLocalRandom.current().nextLong();
        } else if (seedNode.isIntegralNumber() && seedNode.canConvertToLong()) {
            seed = seedNode.asLong();
        } else {
            throw ApiError.badRequest("'seed' must be an integer", "seed");
        }
        boolean stream = optionalBoolean(body, "stream");
        JsonNode options = nullToNull(body.get("stream_options"));
        boolean includeUsage = false;
        if (options != null) {
            if (!options.isObject()) {
                throw ApiError.badRequest("'stream_options' must be an object", "stream_options");
            }
            if (!stream) {
                throw ApiError.badRequest("'stream_options' is only allowed when 'stream' is true", "stream_options");
            }
            includeUsage = optionalBoolean(options, "include_usage", "stream_options.include_usage");
        }
        boolean parallelToolCalls = optionalBoolean(body, "parallel_tool_calls", "parallel_tool_calls", true);
        for (String ignored : List.of("user", "store", "metadata", "service_tier")) {
            JsonNode v = nullToNull(body.get(ignored));
            if (v != null && (v.isArray() || (ignored.equals("user") && !v.isTextual()))) {
                throw ApiError.badRequest("'" + ignored + "' has the wrong type", ignored);
            }
        }
        int logprobs = isChat ? chatLogprobs(body) : completionLogprobs(body);
        // the completions API's echo: the prompt written before the reply (vLLM's chat echo is another thing)
        boolean echo = !isChat && optionalBoolean(body, "echo");
        if (maxTokens != null && maxTokens == 0 && !echo) {
            throw ApiError.badRequest("'max_tokens' must be >= 1, got 0 (0 is for 'echo': the prompt alone)",
                    "max_tokens");
        }
        if (isChat && optionalBoolean(body, "echo")) {
            throw ApiError.badRequest("'echo' is not supported on chat completions", "echo");
        }
        int minTokens = minTokens(body, grammarField);
        if (maxTokens != null && minTokens > maxTokens) {
            throw ApiError.badRequest("'min_tokens' (" + minTokens + ") must not be more than max_tokens ("
                    + maxTokens + ")", "min_tokens");
        }
        boolean ignoreEos = optionalBoolean(body, "ignore_eos");
        if (ignoreEos && grammar != null) {
            throw ApiError.badRequest("'ignore_eos' cannot carry a constrained reply ('" + grammarField + "') past "
                    + "the end of its answer", "ignore_eos");
        }
        // vLLM's prompt_logprobs: each prompt token's log-probability given those before it, with that many top ones
        Integer promptLogprobs = optionalInt(body, "prompt_logprobs", 0);
        if (promptLogprobs != null && promptLogprobs > TokenLogprobs.MAX_TOP) {
            throw ApiError.badRequest("'prompt_logprobs' must be in [0, " + TokenLogprobs.MAX_TOP + "], got "
                    + promptLogprobs, "prompt_logprobs");
        }
        if (promptLogprobs != null && stream) {
            throw ApiError.badRequest("'prompt_logprobs' is served in whole responses, not streamed ones",
                    "prompt_logprobs");
        }
        ReplyOptions replyOptions = new ReplyOptions(logprobs, minTokens, ignoreEos,
                stopTokenIds(body.get("stop_token_ids"), vocabSize));
        List<String> stops = stops(body.get("stop"));
        SamplingParams sampling = new SamplingParams(temperature, topK == null || topK < 0 ? 0 : topK, topP, minP,
                seed, adjustments);
        // vLLM's extension, true by default there too: special tokens stay out of the text unless asked for
        boolean skipSpecial = optionalBoolean(body, "skip_special_tokens", "skip_special_tokens", true);
        return new ApiRequest(isChat, model, chat, prompts, sampling, maxTokens, stops, stream, includeUsage, format,
                toolChoice, skipSpecial, parallelToolCalls, grammar, grammarField, replyOptions, n, echo,
                promptLogprobs == null ? -1 : promptLogprobs);
    }

    /**
     * vLLM's {@code min_tokens}: 0 when absent; refused beside a constrained reply (asked for by
     * {@code grammarField}, null for none), which ends where its answer does.
     */
    private static int minTokens(JsonNode body, String grammarField) {
        Integer min = optionalInt(body, "min_tokens", 0);
        if (min == null || min == 0) {
            return 0;
        }
        if (grammarField != null) {
            throw ApiError.badRequest("'min_tokens' cannot hold a constrained reply ('" + grammarField + "') past "
                    + "the end of its answer", "min_tokens");
        }
        return min;
    }

    /** vLLM's {@code stop_token_ids}: token ids that end a reply as its end-of-sequence id does. */
    private static int[] stopTokenIds(JsonNode ids, int vocabSize) {
        ids = nullToNull(ids);
        if (ids == null) {
            return new int[0];
        }
        if (!ids.isArray() || ids.size() > MAX_STOPS * 4) {
            throw ApiError.badRequest("'stop_token_ids' must be an array of at most " + MAX_STOPS * 4 + " token ids",
                    "stop_token_ids");
        }
        return tokenIds(ids, vocabSize, "stop_token_ids");
    }

    /** Chat's {@code logprobs} (a boolean) and {@code top_logprobs} (0-20, with logprobs only): -1 for none. */
    private static int chatLogprobs(JsonNode body) {
        boolean wanted = optionalBoolean(body, "logprobs");
        Integer top = optionalInt(body, "top_logprobs", 0);
        if (top != null && top > TokenLogprobs.MAX_TOP) {
            throw ApiError.badRequest("'top_logprobs' must be in [0, " + TokenLogprobs.MAX_TOP + "], got " + top,
                    "top_logprobs");
        }
        if (top != null && !wanted) {
            throw ApiError.badRequest("'top_logprobs' needs 'logprobs': true", "top_logprobs");
        }
        return wanted ? (top == null ? 0 : top) : -1;
    }

    /** The completions API's {@code logprobs}: how many top tokens to list (0-20), or -1 when absent. */
    private static int completionLogprobs(JsonNode body) {
        Integer top = optionalInt(body, "logprobs", 0);
        if (top != null && top > TokenLogprobs.MAX_TOP) {
            throw ApiError.badRequest("'logprobs' must be in [0, " + TokenLogprobs.MAX_TOP + "], got " + top,
                    "logprobs");
        }
        return top == null ? -1 : top;
    }

    private static ChatMessage message(JsonNode m, String where) {
        if (m == null || !m.isObject()) {
            throw ApiError.badRequest("'" + where + "' must be an object", where);
        }
        JsonNode role = m.get("role");
        if (role == null || !role.isTextual()) {
            throw ApiError.badRequest("'" + where + ".role' is required and must be a string", where + ".role");
        }
        if (!ROLES.contains(role.asText())) {
            throw ApiError.badRequest("'" + where + ".role' is '" + role.asText() + "'; expected one of system, "
                    + "developer, user, assistant, tool", where + ".role");
        }
        JsonNode content = m.get("content");
        String text;
        if (content == null || content.isNull()) {
            boolean callsTools = role.asText().equals("assistant") && m.path("tool_calls").isArray();
            if (!callsTools) {
                throw ApiError.badRequest("'" + where + ".content' is required", where + ".content");
            }
            text = null;
        } else if (content.isTextual()) {
            text = content.asText();
        } else if (content.isArray()) {
            StringBuilder joined = new StringBuilder();
            for (int i = 0; i < content.size(); i++) {
                JsonNode part = content.get(i);
                String at = where + ".content[" + i + "]";
                if (!part.isObject() || !part.path("type").isTextual()) {
                    throw ApiError.badRequest("'" + at + "' must be an object with a string 'type'", at);
                }
                if (!part.get("type").asText().equals("text")) {
                    throw ApiError.badRequest("'" + at + "' has type '" + part.get("type").asText()
                            + "'; only text parts are supported", at + ".type");
                }
                if (!part.path("text").isTextual()) {
                    throw ApiError.badRequest("'" + at + ".text' must be a string", at + ".text");
                }
                joined.append(part.get("text").asText());
            }
            text = joined.toString();
        } else {
            throw ApiError.badRequest("'" + where + ".content' must be a string or an array of text parts",
                    where + ".content");
        }
        JsonNode name = nullToNull(m.get("name"));
        if (name != null && !name.isTextual()) {
            throw ApiError.badRequest("'" + where + ".name' must be a string", where + ".name");
        }
        JsonNode calls = nullToNull(m.get("tool_calls"));
        if (calls != null && !calls.isArray()) {
            throw ApiError.badRequest("'" + where + ".tool_calls' must be an array", where + ".tool_calls");
        }
        return new ChatMessage(role.asText(), text, m);
    }

    /** The request field at fault: a tools problem names tools, anything else the field being read. */
    private static String fieldOf(MoeException e, String field) {
        String m = e.getMessage() == null ? "" : e.getMessage();
        return m.startsWith("tools") ? "tools" : field;
    }

    /**
     * Each tool message answers a call an earlier assistant message made: its {@code tool_call_id} must be one of
     * their {@code tool_calls} ids, and each call needs a function name.
     */
    private static void checkToolMessages(JsonNode messages) {
        Set<String> calls = new java.util.HashSet<>();
        for (int i = 0; i < messages.size(); i++) {
            JsonNode m = messages.get(i);
            String where = "messages[" + i + "]";
            if (m.path("role").asText().equals("assistant") && m.path("tool_calls").isArray()) {
                JsonNode list = m.get("tool_calls");
                for (int k = 0; k < list.size(); k++) {
                    JsonNode call = list.get(k);
                    String at = where + ".tool_calls[" + k + "]";
                    if (!call.path("function").path("name").isTextual()) {
                        throw ApiError.badRequest("'" + at + ".function.name' must be a string", at + ".function.name");
                    }
                    JsonNode arguments = call.path("function").path("arguments");
                    if (!arguments.isMissingNode() && !arguments.isTextual() && !arguments.isObject()) {
                        throw ApiError.badRequest("'" + at + ".function.arguments' must be a JSON string",
                                at + ".function.arguments");
                    }
                    if (call.path("id").isTextual()) {
                        calls.add(call.get("id").asText());
                    }
                }
            }
            if (m.path("role").asText().equals("tool")) {
                JsonNode id = m.get("tool_call_id");
                if (id == null || !id.isTextual()) {
                    throw ApiError.badRequest("'" + where + ".tool_call_id' is required in a tool message and must "
                            + "be a string", where + ".tool_call_id");
                }
                if (!calls.contains(id.asText())) {
                    throw ApiError.badRequest("'" + where + ".tool_call_id' is '" + id.asText() + "', which no "
                            + "earlier assistant message's tool_calls holds", where + ".tool_call_id");
                }
            }
        }
    }

    /** The reasoning efforts a chat template is given (gpt-oss's harmony format knows these three). */
    static final java.util.List<String> REASONING_EFFORTS = java.util.List.of("low", "medium", "high");

    /** {@code chat_template_kwargs} (an object of any values) and {@code reasoning_effort} (low, medium or high). */
    private static Map<String, JsonNode> templateArgs(JsonNode body) {
        Map<String, JsonNode> args = new LinkedHashMap<>();
        JsonNode kwargs = nullToNull(body.get("chat_template_kwargs"));
        if (kwargs != null) {
            if (!kwargs.isObject()) {
                throw ApiError.badRequest("'chat_template_kwargs' must be an object", "chat_template_kwargs");
            }
            kwargs.properties().forEach(e -> args.put(e.getKey(), e.getValue()));
        }
        JsonNode effort = nullToNull(body.get("reasoning_effort"));
        if (effort != null) {
            if (!effort.isTextual() || !REASONING_EFFORTS.contains(effort.asText())) {
                throw ApiError.badRequest("'reasoning_effort' must be one of " + REASONING_EFFORTS + ", got " + effort,
                        "reasoning_effort");
            }
            args.put("reasoning_effort", effort);
        }
        return args;
    }

    private static void checkTools(JsonNode tools) {
        if (!tools.isArray()) {
            throw ApiError.badRequest("'tools' must be an array", "tools");
        }
        for (int i = 0; i < tools.size(); i++) {
            JsonNode t = tools.get(i);
            String at = "tools[" + i + "]";
            if (!t.isObject() || !"function".equals(t.path("type").asText(null))) {
                throw ApiError.badRequest("'" + at + "' must be an object with type 'function'", at);
            }
            if (!t.path("function").isObject() || !t.path("function").path("name").isTextual()) {
                throw ApiError.badRequest("'" + at + ".function.name' must be a string", at + ".function.name");
            }
            JsonNode parameters = t.get("function").get("parameters");
            if (parameters != null && !parameters.isNull() && !parameters.isObject()) {
                // a JSON schema is an object; a forced call compiles it, and every call's model reads it
                throw ApiError.badRequest("'" + at + ".function.parameters' must be a JSON schema object",
                        at + ".function.parameters");
            }
            for (int j = 0; j < i; j++) {
                if (tools.get(j).path("function").path("name").asText().equals(t.get("function").get("name").asText())) {
                    throw ApiError.badRequest("'" + at + ".function.name' is '" + t.get("function").get("name").asText()
                            + "', as tools[" + j + "]'s: tool names must differ", at + ".function.name");
                }
            }
        }
    }

    /** OpenAI's logit_bias: token ids (as the object's keys) to a bias in [-100, 100]. */
    private static Map<Integer, Float> logitBias(JsonNode bias, int vocabSize) {
        if (bias == null) {
            return Map.of();
        }
        if (!bias.isObject()) {
            throw ApiError.badRequest("'logit_bias' must be an object of token ids to numbers", "logit_bias");
        }
        Map<Integer, Float> out = new java.util.HashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = bias.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String at = "logit_bias." + e.getKey();
            int id;
            try {
                id = Integer.parseInt(e.getKey().strip());
            } catch (NumberFormatException x) {
                throw ApiError.badRequest("'logit_bias' keys must be token ids, got '" + e.getKey() + "'", "logit_bias");
            }
            if (id < 0 || id >= vocabSize) {
                throw ApiError.badRequest("'" + at + "': token id must be in [0, " + vocabSize + ")", "logit_bias");
            }
            JsonNode v = e.getValue();
            if (!v.isNumber() || !(v.asDouble() >= -100 && v.asDouble() <= 100)) {
                throw ApiError.badRequest("'" + at + "' must be a number in [-100, 100], got " + v, "logit_bias");
            }
            out.put(id, (float) v.asDouble());
        }
        return out;
    }

    /** An array of token ids in [0, vocabSize), or a 400 naming {@code field}'s entry at fault. */
    static int[] tokenIds(JsonNode array, int vocabSize, String field) {
        int[] ids = new int[array.size()];
        for (int i = 0; i < ids.length; i++) {
            JsonNode v = array.get(i);
            if (!v.isIntegralNumber() || !v.canConvertToInt() || v.asInt() < 0 || v.asInt() >= vocabSize) {
                throw ApiError.badRequest("'" + field + "[" + i + "]' must be a token id in [0, " + vocabSize
                        + "), got " + v, field);
            }
            ids[i] = v.asInt();
        }
        return ids;
    }

    private static List<String> stops(JsonNode stop) {
        if (stop == null || stop.isNull()) {
            return List.of();
        }
        if (stop.isTextual()) {
            return List.of(stop.asText());
        }
        if (!stop.isArray()) {
            throw ApiError.badRequest("'stop' must be a string or an array of strings", "stop");
        }
        if (stop.size() > MAX_STOPS) {
            throw ApiError.badRequest("'stop' holds " + stop.size() + " strings; at most " + MAX_STOPS, "stop");
        }
        List<String> out = new ArrayList<>();
        for (JsonNode s : stop) {
            if (!s.isTextual()) {
                throw ApiError.badRequest("'stop' must be a string or an array of strings", "stop");
            }
            out.add(s.asText());
        }
        return out;
    }

    private static void requireObject(JsonNode body) {
        if (body == null || !body.isObject()) {
            throw ApiError.badRequest("the request body must be a JSON object", null);
        }
    }

    private static String requiredString(JsonNode body, String field) {
        JsonNode v = body.get(field);
        if (v == null || v.isNull()) {
            throw ApiError.badRequest("'" + field + "' is required", field);
        }
        if (!v.isTextual()) {
            throw ApiError.badRequest("'" + field + "' must be a string", field);
        }
        return v.asText();
    }

    private static JsonNode nullToNull(JsonNode v) {
        return v == null || v.isNull() ? null : v;
    }

    private static Integer optionalInt(JsonNode body, String field, int min) {
        JsonNode v = nullToNull(body.get(field));
        if (v == null) {
            return null;
        }
        if (!v.isIntegralNumber()) {
            throw ApiError.badRequest("'" + field + "' must be an integer", field);
        }
        if (!v.canConvertToInt()) {
            throw ApiError.badRequest("'" + field + "' must be an integer in [" + min + ", " + Integer.MAX_VALUE
                    + "], got " + v, field);
        }
        if (v.asInt() < min) {
            throw ApiError.badRequest("'" + field + "' must be >= " + min + ", got " + v.asInt(), field);
        }
        return v.asInt();
    }

    private static double optionalNumber(JsonNode body, String field, double min, double max, double absent) {
        JsonNode v = nullToNull(body.get(field));
        if (v == null) {
            return absent;
        }
        if (!v.isNumber()) {
            throw ApiError.badRequest("'" + field + "' must be a number", field);
        }
        double d = v.asDouble();
        if (!(d >= min && d <= max)) {
            throw ApiError.badRequest("'" + field + "' must be in [" + Histogram.format(min) + ", "
                    + Histogram.format(max) + "], got " + v, field);
        }
        return d;
    }

    private static boolean optionalBoolean(JsonNode body, String field) {
        return optionalBoolean(body, field, field);
    }

    private static boolean optionalBoolean(JsonNode body, String field, String param) {
        return optionalBoolean(body, field, param, false);
    }

    /** {@code field} of body, a boolean, or {@code absent} where it is missing or null. */
    private static boolean optionalBoolean(JsonNode body, String field, String param, boolean absent) {
        JsonNode v = nullToNull(body.get(field));
        if (v == null) {
            return absent;
        }
        if (v.getNodeType() != JsonNodeType.BOOLEAN) {
            throw ApiError.badRequest("'" + param + "' must be a boolean", param);
        }
        return v.asBoolean();
    }

    private static void refuseTrue(JsonNode body, String field) {
        if (optionalBoolean(body, field)) {
            throw ApiError.badRequest("'" + field + "' is not supported", field);
        }
    }

    private static void refuseNonNull(JsonNode body, String field) {
        if (nullToNull(body.get(field)) != null) {
            throw ApiError.badRequest("'" + field + "' is not supported", field);
        }
    }
}

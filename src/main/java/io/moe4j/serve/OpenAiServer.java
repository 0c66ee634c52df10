package io.moe4j.serve;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.Javalin;
import io.javalin.compression.CompressionStrategy;
import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;
import io.javalin.json.JavalinJackson;
import io.moe4j.MoeException;
import io.moe4j.generate.ChatOutputs;
import io.moe4j.generate.ReplyBudget;
import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.ReplyReader;
import io.moe4j.generate.SamplingParams;
import io.moe4j.generate.constraint.AnswerGrammar;
import io.moe4j.text.tools.ToolCallIds;
import io.moe4j.text.tools.ToolChoice;
import org.eclipse.jetty.ee10.servlet.ServletContextRequest;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The OpenAI-compatible HTTP API over a {@link Scheduler}: {@code GET /v1/models} (and {@code /v1/models/ID}),
 * {@code POST /v1/chat/completions},
 * {@code POST /v1/completions} (plain, or streamed as server-sent events ending with {@code data: [DONE]}),
 * {@code POST /v1/responses} (the Responses API, read as the chat request it amounts to: {@link ResponsesRequest}),
 * vLLM's {@code POST /tokenize} and {@code /detokenize}, {@code GET /health} and {@code GET /metrics}. Refusals are
 * OpenAI error objects with their status; no request can stop the server. Handlers run on virtual threads and block
 * on their sequences' events, so many streams cost no platform threads.
 *
 * <p>A streamed request is cancelled when writing to its client fails (the client went away), which is noticed at its
 * next token, or at the next keep-alive comment while it waits; a non-streamed one runs to its end.
 */
public final class OpenAiServer implements AutoCloseable {
    private static final Set<String> ROUTES = Set.of("/v1/models", "/v1/chat/completions", "/v1/completions",
            "/v1/responses", "/health", "/metrics", "/tokenize", "/detokenize");

    /** The generation routes: each reads its request and shapes its answer its own way. */
    private enum Api { CHAT, COMPLETIONS, RESPONSES }
    private static final String MODEL_ROUTE = "/v1/models/";

    private final ServedModel served;
    private final ServerConfig config;
    private final ServeMetrics metrics = new ServeMetrics();
    /** Responses answered with store (the default), for previous_response_id and GET /v1/responses/ID. */
    private final ResponsesStore responses = new ResponsesStore(1024, 256L << 20);
    private final Scheduler scheduler;
    /** The most sequences the scheduler queues: a request's choices must fit at once. */
    private final int maxQueue;
    private final ObjectMapper json;
    private final long created = System.currentTimeMillis() / 1000;
    private final AtomicLong ids = new AtomicLong();
    private final String idPrefix = Long.toHexString(System.nanoTime() & 0xffffffL);
    private final Javalin app;
    /** Generation handlers still running (writing a response or a stream). */
    private final java.util.concurrent.atomic.AtomicInteger generating = new java.util.concurrent.atomic.AtomicInteger();

    public OpenAiServer(ServedModel served, SchedulerConfig schedulerConfig, ServerConfig config) {
        this.served = served;
        this.config = config;
        this.json = new ObjectMapper()
                .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
                .enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);
        this.scheduler = new Scheduler(served.model(), served.text(), schedulerConfig, metrics);
        this.maxQueue = schedulerConfig.maxQueue();
        this.app = Javalin.create(cfg -> {
            cfg.startup.showJavalinBanner = false;
            cfg.startup.showOldJavalinVersionWarning = false;
            cfg.concurrency.useVirtualThreads = true;
            cfg.http.compressionStrategy = CompressionStrategy.NONE;
            // Bodies are read and bounded here, so Javalin's own limit only needs to be no lower.
            cfg.http.maxRequestSize = config.maxBodyBytes() + 1L;
            cfg.jsonMapper(new JavalinJackson(json, true));
            cfg.jetty.host = config.host();
            cfg.jetty.port = config.port();
            cfg.routes.before("/v1/*", this::authenticate);
            cfg.routes.get("/health", ctx -> ctx.contentType("application/json").result("{\"status\":\"ok\"}"));
            cfg.routes.get("/metrics", ctx -> ctx.contentType("text/plain; version=0.0.4; charset=utf-8")
                    .result(metrics.prometheus()));
            cfg.routes.get("/v1/models", this::models);
            // <id> rather than {id}: model ids such as "openai/gpt-oss-20b" hold slashes.
            cfg.routes.get("/v1/models/<id>", this::model);
            cfg.routes.post("/v1/chat/completions", ctx -> tracked(ctx, Api.CHAT));
            cfg.routes.post("/v1/completions", ctx -> tracked(ctx, Api.COMPLETIONS));
            cfg.routes.post("/v1/responses", ctx -> tracked(ctx, Api.RESPONSES));
            cfg.routes.get("/v1/responses/<id>", this::storedResponse);
            cfg.routes.delete("/v1/responses/<id>", this::deleteResponse);
            // vLLM's token routes, outside /v1 as there (the API key holds for them too)
            cfg.routes.before("/tokenize", this::authenticate);
            cfg.routes.before("/detokenize", this::authenticate);
            cfg.routes.post("/tokenize", this::tokenize);
            cfg.routes.post("/detokenize", this::detokenize);
            for (String generation : List.of("/v1/chat/completions", "/v1/completions", "/v1/responses")) {
                // the route exists: another method is a 405 naming the one it takes, not a 404
                cfg.routes.get(generation, ctx -> {
                    ctx.header("Allow", "POST");
                    throw new ApiError(405, ctx.method() + " " + ctx.path() + " is not allowed: send a POST",
                            "invalid_request_error", null, "method_not_allowed");
                });
            }
            cfg.routes.exception(ApiError.class, (e, ctx) -> writeError(ctx, e));
            cfg.routes.exception(HttpResponseException.class, (e, ctx) -> writeError(ctx, fromJavalin(e)));
            cfg.routes.exception(Exception.class, (e, ctx) -> writeError(ctx,
                    new ApiError(500, "internal error: " + e, "server_error", null, null)));
            cfg.routes.after(ctx -> metrics.request(ROUTES.contains(ctx.path()) ? ctx.path()
                    : ctx.path().startsWith(MODEL_ROUTE) ? MODEL_ROUTE + "{id}" : "other", ctx.statusCode()));
        });
    }

    /** Starts listening; returns this. Fails with the address when it cannot listen (a port in use, say). */
    public OpenAiServer start() {
        try {
            app.start();
        } catch (RuntimeException e) {
            scheduler.close();
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            throw new MoeException("cannot listen on " + config.host() + ":" + config.port() + ": "
                    + cause.getMessage(), e);
        }
        return this;
    }

    /** The port listened on (the one picked when the config asked for 0). */
    public int port() {
        return app.port();
    }

    public ServeMetrics metrics() {
        return metrics;
    }

    public Scheduler scheduler() {
        return scheduler;
    }

    /** Refuses new requests, lets running ones finish within the configured grace (then cancels them), stops. */
    @Override
    public void close() {
        scheduler.shutdown(config.shutdownGrace());
        // The scheduler has ended every sequence; let the handlers write their last events (a stream's abort chunk
        // and [DONE]) before the connections close, for at most a few seconds.
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        synchronized (generating) {
            while (generating.get() > 0 && System.nanoTime() < deadline) {
                try {
                    generating.wait(Math.max(1, (deadline - System.nanoTime()) / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
        }
        app.stop();
    }

    /** Runs a generation handler, counted so that {@link #close} can wait for it to finish writing. */
    private void tracked(Context ctx, Api api) throws IOException {
        generating.incrementAndGet();
        try {
            JsonNode sent = readBody(ctx);
            if (api != Api.RESPONSES) {
                generate(ctx, api, sent, sent);
                return;
            }
            JsonNode chat = ResponsesRequest.toChat(sent, responses); // refusals here name the Responses fields
            try {
                generate(ctx, api, sent, chat);
            } catch (ApiError e) {
                // checked as the chat request it amounts to: its refusals are put in the Responses API's terms
                throw ResponsesRequest.inResponsesTerms(e);
            }
        } finally {
            synchronized (generating) {
                generating.decrementAndGet();
                generating.notifyAll();
            }
        }
    }

    private void authenticate(Context ctx) {
        if (config.apiKey() == null) {
            return;
        }
        String header = ctx.header("Authorization");
        String expected = "Bearer " + config.apiKey();
        if (header == null || !MessageDigest.isEqual(header.getBytes(StandardCharsets.UTF_8),
                expected.getBytes(StandardCharsets.UTF_8))) {
            throw new ApiError(401, header == null ? "missing API key: send 'Authorization: Bearer KEY'"
                    : "incorrect API key", "authentication_error", null, "invalid_api_key");
        }
    }

    /** {@code GET /v1/responses/ID}: a stored response as it was answered. */
    private void storedResponse(Context ctx) {
        String id = ctx.pathParam("id");
        ResponsesStore.Stored stored = responses.get(id);
        if (stored == null) {
            throw notStored(id);
        }
        ctx.contentType("application/json").result(stored.response().toString());
    }

    /** OpenAI's {@code DELETE /v1/responses/ID}: the stored response is forgotten (a later previous_response_id too). */
    private void deleteResponse(Context ctx) {
        String id = ctx.pathParam("id");
        if (!responses.remove(id)) {
            throw notStored(id);
        }
        ctx.contentType("application/json").result(json.createObjectNode().put("id", id)
                .put("object", "response.deleted").put("deleted", true).toString());
    }

    private ApiError notStored(String id) {
        return new ApiError(404, "no response '" + ResponsesRequest.shortened(id) + "' is stored here (this server "
                + "keeps the last " + responses.capacity() + ", in memory, those sent with 'store' true)",
                "invalid_request_error", null, "not_found");
    }

    private void models(Context ctx) {
        ObjectNode list = json.createObjectNode().put("object", "list");
        list.putArray("data").add(modelObject());
        ctx.contentType("application/json").result(list.toString());
    }

    private void model(Context ctx) {
        String id = ctx.pathParam("id");
        if (!id.equals(served.id())) {
            throw new ApiError(404, "the model '" + id + "' does not exist; this server serves '" + served.id() + "'",
                    "invalid_request_error", "model", "model_not_found");
        }
        ctx.contentType("application/json").result(modelObject().toString());
    }

    /**
     * vLLM's {@code POST /tokenize}: a {@code prompt} (with the tokenizer's added tokens unless
     * {@code add_special_tokens} is false) or chat {@code messages} (and {@code tools}, rendered as a chat request
     * is) to {@code {"count", "max_model_len", "tokens"}}.
     */
    private void tokenize(Context ctx) throws IOException {
        JsonNode body = withModel(readBody(ctx));
        // vLLM's options this route does not act on: refused when they ask for anything
        if (body.has("messages") && body.has("prompt")) {
            throw ApiError.badRequest("send 'prompt' or 'messages', not both", "prompt");
        }
        if (body.path("add_generation_prompt").isBoolean() && !body.get("add_generation_prompt").booleanValue()) {
            throw ApiError.badRequest("'add_generation_prompt' false is not supported: a chat is tokenized as it is "
                    + "sent for a reply", "add_generation_prompt");
        }
        for (String field : List.of("continue_final_message", "return_token_strs")) {
            if (body.path(field).asBoolean(false)) {
                throw ApiError.badRequest("'" + field + "' is not supported", field);
            }
        }
        int[] tokens;
        if (body.has("messages")) {
            tokens = prompt(RequestParser.chat(body, served.sampling(), null, served.model().vocabSize()), null);
        } else {
            JsonNode prompt = body.get("prompt");
            if (prompt == null || !prompt.isTextual()) {
                throw ApiError.badRequest("'prompt' (a string) or 'messages' is required", "prompt");
            }
            JsonNode add = body.get("add_special_tokens");
            if (add != null && !add.isBoolean() && !add.isNull()) {
                throw ApiError.badRequest("'add_special_tokens' must be a boolean", "add_special_tokens");
            }
            tokens = add == null || add.isNull() || add.booleanValue() ? served.text().encode(prompt.asText())
                    : served.text().encodeChatText(prompt.asText());
        }
        ObjectNode out = json.createObjectNode().put("count", tokens.length)
                .put("max_model_len", served.model().contextLength());
        var list = out.putArray("tokens");
        for (int t : tokens) {
            list.add(t);
        }
        out.putNull("token_strs");
        ctx.contentType("application/json").result(out.toString());
    }

    /** Token ids as text, special tokens written out. */
    private String decoded(int[] ids) {
        TextCodec.Detokenizer d = served.text().detokenizer(false);
        StringBuilder text = new StringBuilder();
        for (int id : ids) {
            text.append(d.accept(id));
        }
        return text.append(d.flush()).toString();
    }

    /** vLLM's {@code POST /detokenize}: {@code tokens} to {@code {"prompt"}}, special tokens written out. */
    private void detokenize(Context ctx) throws IOException {
        JsonNode body = withModel(readBody(ctx));
        JsonNode tokens = body.get("tokens");
        if (tokens == null || !tokens.isArray()) {
            throw ApiError.badRequest("'tokens' (an array of token ids) is required", "tokens");
        }
        int[] ids = RequestParser.tokenIds(tokens, served.model().vocabSize(), "tokens");
        ctx.contentType("application/json").result(json.createObjectNode().put("prompt", decoded(ids)).toString());
    }

    /** The body, with this server's model where it names none (optional on the token routes); another is a 404. */
    private JsonNode withModel(JsonNode body) {
        if (!body.isObject()) {
            throw ApiError.badRequest("the body must be a JSON object", null);
        }
        JsonNode model = body.get("model");
        if (model == null || model.isNull()) {
            return ((ObjectNode) body.deepCopy()).put("model", served.id());
        }
        if (!model.isTextual() || !model.asText().equals(served.id())) {
            throw new ApiError(404, "the model '" + model.asText() + "' does not exist; this server serves '"
                    + served.id() + "'", "invalid_request_error", "model", "model_not_found");
        }
        return body;
    }

    private ObjectNode modelObject() {
        return json.createObjectNode()
                .put("id", served.id())
                .put("object", "model")
                .put("created", created)
                .put("owned_by", "moe4j")
                .put("max_model_len", served.model().contextLength());
    }

    /** Answers one generation request: {@code sent} as the client sent it, {@code body} as chat reads it. */
    private void generate(Context ctx, Api api, JsonNode sent, JsonNode body) {
        boolean chat = api != Api.COMPLETIONS;
        ChatOutputs outputs = served.text().chatOutputs();
        ApiRequest request = chat ? RequestParser.chat(body, served.sampling(), outputs == null ? null : outputs.trie(),
                served.model().vocabSize())
                : RequestParser.completion(body, served.model().vocabSize(), served.sampling(),
                        outputs == null ? null : outputs.trie());
        if (!request.model().equals(served.id())) {
            throw new ApiError(404, "the model '" + request.model() + "' does not exist; this server serves '"
                    + served.id() + "'", "invalid_request_error", "model", "model_not_found");
        }
        String promptText = chat ? chatText(request) : null;
        if (chat && request.toolChoice() instanceof ToolChoice.Auto && request.chat().tools() != null
                && !request.chat().tools().isEmpty()) {
            refuseUnreadToolCalls(promptText);
        }
        // a chat's one prompt, or each of a completions request's prompts (n choices each)
        List<int[]> prompts = new ArrayList<>();
        if (chat) {
            prompts.add(promptText != null ? served.text().encodeChatText(promptText) : prompt(request, null));
        } else {
            for (CompletionPrompt p : request.prompts()) {
                prompts.add(prompt(request, p));
            }
        }
        int context = served.model().contextLength();
        int[] room = new int[prompts.size()];
        for (int p = 0; p < prompts.size(); p++) {
            room[p] = room(request, prompts.get(p), context,
                    chat ? "messages" : prompts.size() > 1 ? "prompt[" + p + "]" : "prompt");
        }
        String param = chat ? "messages" : "prompt";
        int sequences = prompts.size() * request.n();
        if (sequences > maxQueue) {
            throw ApiError.badRequest((prompts.size() > 1 ? prompts.size() + " prompts of 'n' " + request.n()
                    + " ask" : "'n' " + request.n() + " asks") + " for " + sequences + " sequences but this server "
                    + "queues at most " + maxQueue + " (--max-queue)", prompts.size() > 1 ? "prompt" : "n");
        }
        // Each choice is a sequence of its own, with its own constraint and reader (each follows one reply); the
        // first is built before anything is submitted, so that a request it refuses submits nothing.
        ReplyConstraint first = constraint(request, promptText, room[0]);
        // Stop strings never cut a constrained reply: its answer would be left incomplete.
        List<String> stops = first == null ? request.stops() : List.of();
        BlockingQueue<RequestChannel.Event> events = RequestChannel.queue();
        List<GenerationRequest> requests = new ArrayList<>();
        List<GenerationListener> channels = new ArrayList<>();
        List<ReplyReader> readers = new ArrayList<>();
        // echo with logprobs: the prompt's tokens are scored too, as the legacy completions API lists them; and
        // vLLM's prompt_logprobs (the prompt is scored once, with the larger of the two top counts)
        int promptLogprobs = Math.max(request.echo() ? request.replyOptions().logprobs() : -1,
                request.promptLogprobs());
        for (int p = 0; p < prompts.size(); p++) {
            for (int i = 0; i < request.n(); i++) {
                ReplyConstraint constraint = p == 0 && i == 0 ? first : constraint(request, promptText, room[p]);
                ReplyReader reader = reader(request, promptText);
                // A reader splits the reply at the model's special tokens (channels, tool calls): it gets them all.
                boolean skipSpecial = request.skipSpecialTokens() && reader == null;
                // choice i draws with seed + i: n samples, not n copies of one (greedy ones are alike anyway)
                SamplingParams sampling = request.sampling().withSeed(request.sampling().seed() + i);
                requests.add(new GenerationRequest(prompts.get(p), sampling, room[p], stops, constraint, skipSpecial,
                        request.replyOptions(), promptLogprobs));
                channels.add(new RequestChannel(requests.size() - 1, events));
                readers.add(reader);
            }
        }
        List<Ticket> tickets;
        try {
            // all of a request's choices are queued together, or none
            tickets = scheduler.submitAll(requests, channels);
        } catch (AdmissionException e) {
            throw e.queueFull() ? new ApiError(429, e.getMessage(), "rate_limit_error", null, "queue_full")
                    : new ApiError(503, e.getMessage(), "server_error", null, "shutting_down");
        } catch (IllegalArgumentException e) {
            throw ApiError.badRequest(e.getMessage(), param);
        }
        List<ReplyDelivery.Choice> choices = new ArrayList<>();
        for (int i = 0; i < tickets.size(); i++) {
            LogprobsWriter logprobs = request.replyOptions().logprobs() < 0 ? null
                    : new LogprobsWriter(json, chat, served.text()::tokenBytes);
            // the usage counts each prompt once, with its first choice
            choices.add(new ReplyDelivery.Choice(i, tickets.get(i), readers.get(i), logprobs,
                    i % request.n() == 0));
        }
        if (api == Api.RESPONSES) {
            respond(ctx, sent, body, request, events, choices.getFirst());
            return;
        }
        String id = (chat ? "chatcmpl-" : "cmpl-") + idPrefix + Long.toHexString(ids.incrementAndGet());
        ResponseShapes shapes = new ResponseShapes(json, chat, id, System.currentTimeMillis() / 1000, served.id());
        ReplyDelivery delivery = new ReplyDelivery(events, choices, shapes);
        delivery.countReasoning(this::tokenCount);
        delivery.promptScores(request.echo() ? request.replyOptions().logprobs() : -1, request.promptLogprobs(),
                new LogprobsWriter(json, chat, served.text()::tokenBytes));
        if (request.echo()) {
            for (int i = 0; i < choices.size(); i++) {
                CompletionPrompt p = request.prompts().get(i / request.n());
                delivery.echo(i, p.text() != null ? p.text() : decoded(p.ids()), prompts.get(i / request.n())[0]);
            }
        }
        ServletContextRequest core = ServletContextRequest.getServletContextRequest(ctx.req());
        if (core != null) {
            // Failures Jetty reports while the request runs end its sequences too. A client that hangs up is seen
            // when a write fails (a streamed request at its next token, or keep-alive line) or by a plain request's
            // probe.
            core.addFailureListener(failure -> delivery.cancelAll());
        }
        try {
            if (request.stream()) {
                delivery.stream(ctx, request.includeUsage(), config.keepAlive().toMillis());
            } else {
                delivery.whole(ctx, HangUpProbe.of(core));
            }
        } catch (InterruptedException e) {
            delivery.cancelAll();
            Thread.currentThread().interrupt();
            throw new ApiError(503, "the server is shutting down", "server_error", null, "shutting_down");
        }
    }

    /**
     * Answers a Responses API request (one choice) whole or streamed, as {@link ResponsesDelivery} shapes it, and
     * stores the answered response unless the request says {@code store: false}.
     */
    private void respond(Context ctx, JsonNode sent, JsonNode chat, ApiRequest request,
                         BlockingQueue<RequestChannel.Event> events, ReplyDelivery.Choice choice) {
        String serial = idPrefix + Long.toHexString(ids.incrementAndGet());
        ResponsesShapes shapes = new ResponsesShapes(json, "resp_" + serial, System.currentTimeMillis() / 1000,
                served.id(), sent, request.sampling(), this::tokenCount);
        ResponsesDelivery delivery = new ResponsesDelivery(events, choice, shapes, serial);
        ServletContextRequest core = ServletContextRequest.getServletContextRequest(ctx.req());
        if (core != null) {
            core.addFailureListener(failure -> choice.ticket.cancel());
        }
        try {
            if (request.stream()) {
                delivery.stream(ctx, config.keepAlive().toMillis());
            } else {
                delivery.whole(ctx, HangUpProbe.of(core));
            }
            ObjectNode answered = delivery.answered();
            if (answered != null && ResponsesShapes.stores(sent)) {
                responses.put(answered.get("id").asText(), new ResponsesStore.Stored(answered,
                        ResponsesRequest.conversation(sent, chat, answered)));
            }
        } catch (InterruptedException e) {
            choice.ticket.cancel();
            Thread.currentThread().interrupt();
            throw new ApiError(503, "the server is shutting down", "server_error", null, "shutting_down");
        }
    }

    /** The tokens a text of a reply encodes to (its reasoning's count in the usage). */
    private int tokenCount(String text) {
        return text.isEmpty() ? 0 : served.text().encodeChatText(text).length;
    }

    /** The rendered chat as text, where the model's text side renders it so (null otherwise). */
    private String chatText(ApiRequest request) {
        try {
            return served.text().renderChatText(request.chat());
        } catch (MoeException | IllegalArgumentException e) {
            throw ApiError.badRequest("the prompt cannot be rendered: " + e.getMessage(), "messages");
        }
    }

    /**
     * The constraint of a request that asks for one: a forced tool call (tool_choice required or named), a
     * response_format json_object / json_schema, or vLLM's guided decoding; null for free text. A chat's answer
     * follows the family's reasoning; a completion is held from its first token.
     */
    private ReplyConstraint constraint(ApiRequest request, String promptText, int maxTokens) {
        // compiled as the request was read, with this model's token trie
        AnswerGrammar grammar = request.grammar();
        if (grammar == null) {
            return null;
        }
        String param = request.grammarField();
        ChatOutputs outputs = served.text().chatOutputs();
        if (outputs == null || (request.isChat() && promptText == null)) {
            throw ApiError.badRequest("'" + param + "' needs constrained decoding, which this model does not offer",
                    param);
        }
        ReplyConstraint constraint;
        try {
            constraint = request.isChat() ? outputs.constraint(promptText, grammar, maxTokens)
                    : outputs.answerOnly(grammar);
        } catch (MoeException e) {
            throw ApiError.badRequest(e.getMessage(), param);
        }
        if (constraint.minTokens() > maxTokens) {
            throw ApiError.badRequest("the shortest reply that fits '" + param + "' needs " + constraint.minTokens()
                    + " tokens; max_tokens (or the context left) allows " + maxTokens, "max_tokens");
        }
        return constraint;
    }

    /**
     * Refuses tools offered with tool_choice auto where no parser reads this model's calls out of its text (as vLLM
     * refuses without a tool-call parser): the calls would come back as text, never as tool calls.
     */
    private void refuseUnreadToolCalls(String promptText) {
        ChatOutputs outputs = served.text().chatOutputs();
        if (outputs != null && promptText != null && outputs.readsFreeToolCalls(promptText)) {
            return;
        }
        if (outputs == null) {
            throw ApiError.badRequest("this model offers no tool calls: send 'tool_choice' 'none' or no 'tools'",
                    "tool_choice");
        }
        throw ApiError.badRequest("'tool_choice' auto (the default with tools) needs the model's tool calls read out "
                + "of free text, and this server has no tool-call parser for this model (" + outputs.family()
                .modelType() + "): send 'tool_choice' 'required' or a named function (calls by constrained "
                + "decoding), or 'none'", "tool_choice");
    }

    /** A reader that splits the reply into answer, reasoning and tool calls; null where the model offers none. */
    private ReplyReader reader(ApiRequest request, String promptText) {
        ChatOutputs outputs = served.text().chatOutputs();
        if (!request.isChat() || outputs == null || promptText == null) {
            return null;
        }
        ToolChoice choice = request.toolChoice();
        boolean forced = choice instanceof ToolChoice.Required || choice instanceof ToolChoice.Named;
        boolean free = choice instanceof ToolChoice.Auto;
        // harmony markers count only where the model generated them as special tokens (the Scheduler reports where)
        ReplyReader reader = outputs.reader(promptText, free, forced, ToolCallIds.random()).markersFromTokens();
        return request.parallelToolCalls() ? reader : reader.oneCallOnly();
    }

    /** The tokens of a chat's rendered prompt ({@code completion} null) or of one completions prompt. */
    private int[] prompt(ApiRequest request, CompletionPrompt completion) {
        try {
            if (completion == null) {
                return served.text().renderChat(request.chat());
            }
            return completion.ids() != null ? completion.ids() : served.text().encode(completion.text());
        } catch (MoeException | IllegalArgumentException e) {
            throw ApiError.badRequest("the prompt cannot be rendered: " + e.getMessage(),
                    request.isChat() ? "messages" : "prompt");
        }
    }

    /**
     * The reply's room after {@code prompt} (the request's max tokens, within the context: the scheduler's own rule,
     * so that a constraint is built for the room the reply really has); refuses a prompt that leaves none, or a
     * max_tokens the context cannot hold.
     */
    private static int room(ApiRequest request, int[] prompt, int context, String param) {
        if (prompt.length == 0) {
            throw ApiError.badRequest("the prompt is empty", param);
        }
        boolean promptOnly = request.maxTokens() != null && request.maxTokens() == 0;
        if (prompt.length > context || (prompt.length == context && !promptOnly)) {
            throw ApiError.badRequest("this model's context holds " + context + " tokens; the prompt has "
                    + prompt.length + (promptOnly ? "" : ", which leaves no room for an answer"), param,
                    "context_length_exceeded");
        }
        if (request.maxTokens() != null && request.maxTokens() > context - prompt.length) {
            // As OpenAI and vLLM answer: a reply the request allows but the context cannot hold is refused, not cut.
            throw ApiError.badRequest("max_tokens (or max_completion_tokens) is " + request.maxTokens()
                    + " but this model's context holds " + context + " tokens and the prompt has " + prompt.length
                    + ", which leaves " + (context - prompt.length), "max_tokens", "context_length_exceeded");
        }
        return new ReplyBudget(request.maxTokens() == null ? Integer.MAX_VALUE : request.maxTokens(), context)
                .room(0, prompt.length);
    }

    private JsonNode readBody(Context ctx) throws IOException {
        long declared = ctx.req().getContentLengthLong();
        byte[] bytes;
        try (InputStream in = ctx.req().getInputStream()) {
            if (declared > config.maxBodyBytes()) {
                discard(in, declared);
                throw tooLarge(declared);
            }
            bytes = in.readNBytes(config.maxBodyBytes() + 1);
            if (bytes.length > config.maxBodyBytes()) {
                discard(in, Long.MAX_VALUE);
                throw tooLarge(-1);
            }
        }
        if (bytes.length == 0) {
            throw ApiError.badRequest("the request body is empty; send a JSON object", null);
        }
        try {
            return json.readTree(bytes);
        } catch (JsonProcessingException e) {
            throw ApiError.badRequest("the body is not valid JSON: " + io.moe4j.config.JsonErrors.describe(e), null,
                    "invalid_json");
        }
    }

    /**
     * Reads and drops what is left of a refused body, up to {@link #DISCARDED_BYTES_MOST}: a connection closed with
     * the client's bytes still unread is reset, and the reset can reach the client before the 413 it was sent (the
     * client then sees no response at all). A body larger than that is cut off, and its client may see the reset.
     */
    private static void discard(InputStream in, long declared) throws IOException {
        long left = Math.min(declared, DISCARDED_BYTES_MOST);
        byte[] scratch = new byte[8192];
        while (left > 0) {
            int n = in.read(scratch, 0, (int) Math.min(scratch.length, left));
            if (n < 0) {
                return;
            }
            left -= n;
        }
    }

    /** The most bytes of a refused body read and dropped before the 413 (see {@link #discard}). */
    private static final long DISCARDED_BYTES_MOST = 8L << 20;

    private ApiError tooLarge(long declared) {
        return new ApiError(413, "the request body is " + (declared > 0 ? declared + " bytes" : "larger than allowed")
                + "; at most " + config.maxBodyBytes() + " bytes are accepted", "invalid_request_error", null,
                "request_too_large");
    }

    private static ApiError fromJavalin(HttpResponseException e) {
        int status = e.getStatus();
        String type = status >= 500 ? "server_error" : "invalid_request_error";
        String code = switch (status) {
            case 404 -> "not_found";
            case 405 -> "method_not_allowed";
            case 413 -> "request_too_large";
            default -> null;
        };
        return new ApiError(status, e.getMessage(), type, null, code);
    }

    private void writeError(Context ctx, ApiError e) {
        ObjectNode error = json.createObjectNode();
        ObjectNode inner = error.putObject("error");
        inner.put("message", e.getMessage());
        inner.put("type", e.type());
        inner.put("param", e.param());
        inner.put("code", e.code());
        ctx.status(e.status()).contentType("application/json").result(error.toString());
    }
}

package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.openai.client.OpenAIClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.helpers.ChatCompletionAccumulator;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionChunk;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.chat.completions.ChatCompletionMessageToolCall;
import io.moe4j.generate.MoeModel;
import io.moe4j.testing.SchemaCheck;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Tools, reasoning and structured outputs through the server, driven by the official OpenAI Java SDK, over two
 * random models with real tokenizers and chat templates: a Qwen3-MoE (Qwen3's vocabulary, {@code <think>} and
 * {@code <tool_call>}) and a gpt-oss (its 200k vocabulary and harmony). Random weights write nothing sensible, so
 * valid JSON and valid calls can only come from the constraint.
 */
@Timeout(300)
class AgentServerTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    static final List<String> SCHEMAS = List.of(
            // nested objects, an optional field
            """
            {"type": "object", "properties": {
               "name": {"type": "string"},
               "address": {"type": "object", "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                           "required": ["city"], "additionalProperties": false}},
             "required": ["name", "address"], "additionalProperties": false}
            """,
            // arrays of enums and a bounded array
            """
            {"type": "object", "properties": {
               "colors": {"type": "array", "items": {"enum": ["red", "green", "blue"]}, "maxItems": 3},
               "count": {"type": "integer"}},
             "required": ["colors", "count"]}
            """,
            // enums of several kinds, a boolean
            """
            {"type": "object", "properties": {
               "status": {"type": "string", "enum": ["ok", "failed", "pending"]},
               "level": {"enum": [1, 2, 3]},
               "urgent": {"type": "boolean"}},
             "required": ["status", "level", "urgent"], "additionalProperties": false}
            """,
            // an array of objects with optional fields
            """
            {"type": "object", "properties": {
               "items": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "object",
                 "properties": {"id": {"type": "integer"}, "done": {"type": "boolean"}, "note": {"type": "string"}},
                 "required": ["id"], "additionalProperties": false}}},
             "required": ["items"], "additionalProperties": false}
            """,
            // a number, an optional nested object, anyOf
            """
            {"type": "object", "properties": {
               "score": {"type": "number"},
               "meta": {"type": "object", "properties": {"source": {"type": "string"}}, "additionalProperties": false},
               "label": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
             "required": ["score", "label"], "additionalProperties": false}
            """);
    private static final String TOOLS = """
            [{"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
               "parameters": {"type": "object", "properties": {
                 "city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
                 "required": ["city"], "additionalProperties": false}}},
             {"type": "function", "function": {"name": "add", "description": "Adds two integers",
               "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                 "required": ["a", "b"], "additionalProperties": false}}}]
            """;

    @TempDir
    static Path tmp;
    static RandomModelServers servers;
    static MoeModel qwen;
    static MoeModel gptOss;
    static OpenAiServer qwenServer;
    static OpenAiServer gptOssServer;
    static OpenAIClient qwenClient;
    static OpenAIClient gptOssClient;

    @BeforeAll
    static void start() {
        // sequences kept: gpt-oss's sliding-window layers rewind through the many requests that share its prompt
        servers = RandomModelServers.start(tmp, 11, 12, new SchedulerConfig(10, 128, 512, 2));
        qwen = servers.qwen();
        gptOss = servers.gptOss();
        qwenServer = servers.qwenServer();
        gptOssServer = servers.gptOssServer();
        qwenClient = servers.qwenClient();
        gptOssClient = servers.gptOssClient();
    }

    @AfterAll
    static void stop() {
        if (servers != null) {
            servers.close();
        }
    }

    private static String id(boolean gpt) {
        return RandomModelServers.id(gpt);
    }

    private static OpenAIClient client(boolean gpt) {
        return servers.client(gpt);
    }

    private static JsonNode tree(String json) {
        try {
            return JSON.readTree(json);
        } catch (Exception e) {
            throw new AssertionError("not JSON: " + json, e);
        }
    }

    private static JsonValue value(String json) {
        return JsonValue.from(JSON.convertValue(tree(json), Object.class));
    }

    private static ChatCompletionCreateParams.Builder chat(boolean gpt, String user, int maxTokens, long seed) {
        return ChatCompletionCreateParams.builder().model(id(gpt)).addUserMessage(user).temperature(1.0).seed(seed)
                .maxCompletionTokens(maxTokens);
    }

    private static String reasoning(ChatCompletion c) {
        JsonValue r = c.choices().getFirst().message()._additionalProperties().get("reasoning_content");
        return r == null ? "" : String.valueOf(r.asString().orElse(""));
    }

    /** 100 sampled requests a model over five schemas, ten at a time: every answer parses and validates. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void jsonSchemaOutputsAlwaysValidate(boolean gpt) throws Exception {
        int requests = 100;
        ExecutorService pool = Executors.newFixedThreadPool(10);
        try {
            List<Future<ChatCompletion>> answers = new ArrayList<>();
            for (int i = 0; i < requests; i++) {
                String schema = SCHEMAS.get(i % SCHEMAS.size());
                long seed = 1000 + i;
                answers.add(pool.submit(() -> client(gpt).chat().completions().create(
                        chat(gpt, "Describe something as JSON", gpt ? 72 : 56, seed)
                                .putAdditionalBodyProperty("response_format", value("""
                                        {"type": "json_schema", "json_schema": {"name": "thing", "schema": %s}}
                                        """.formatted(schema))).build())));
            }
            int reasoned = 0;
            for (int i = 0; i < requests; i++) {
                ChatCompletion c = answers.get(i).get();
                String content = c.choices().getFirst().message().content().orElseThrow();
                JsonNode doc = tree(content.strip());
                assertThat(SchemaCheck.errors(tree(SCHEMAS.get(i % SCHEMAS.size())), doc))
                        .as("request %d: %s", i, content).isEmpty();
                // a random model writes its strings on until the budget closes them: then a length, else a stop
                assertThat(c.choices().getFirst().finishReason().asString()).isIn("stop", "length");
                reasoned += reasoning(c).isEmpty() ? 0 : 1;
                // the usage counts the reasoning's tokens, within the completion's
                var usage = c.usage().orElseThrow();
                long reasoningTokens = usage.completionTokensDetails().flatMap(d -> d.reasoningTokens()).orElse(-1L);
                assertThat(reasoningTokens > 0).as("request %d", i).isEqualTo(!reasoning(c).isEmpty());
                assertThat(reasoningTokens).isLessThanOrEqualTo(usage.completionTokens());
            }
            if (gpt) {
                // gpt-oss reasons on its analysis channel before the final answer: that text is reasoning_content
                assertThat(reasoned).isGreaterThan(requests / 2);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Patterns, formats and lengths reach the server's constraint: an independent validator checks each answer. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void stringRulesHoldInServedAnswers(boolean gpt) throws Exception {
        String schema = """
                {"type": "object", "properties": {
                   "when": {"type": "string", "format": "date-time"},
                   "code": {"type": "string", "pattern": "^[A-Z]{3}-[0-9]{2,4}$"},
                   "name": {"type": "string", "minLength": 2, "maxLength": 8}},
                 "required": ["when", "code", "name"], "additionalProperties": false}""";
        com.networknt.schema.Schema reference = com.networknt.schema.SchemaRegistry.withDefaultDialect(
                com.networknt.schema.SpecificationVersion.DRAFT_2020_12, b -> b.schemaRegistryConfig(
                        com.networknt.schema.SchemaRegistryConfig.builder().formatAssertionsEnabled(true).build()))
                .getSchema(schema);
        for (long seed = 1; seed <= 3; seed++) {
            ChatCompletion c = client(gpt).chat().completions().create(chat(gpt, "When and what?", gpt ? 96 : 72, seed)
                    .putAdditionalBodyProperty("response_format", value("""
                            {"type": "json_schema", "json_schema": {"name": "event", "schema": %s}}
                            """.formatted(schema))).build());
            String content = c.choices().getFirst().message().content().orElseThrow();
            assertThat(reference.validate(tree(content.strip()))).as(content).isEmpty();
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void requiredToolChoiceGivesValidCalls(boolean gpt) {
        JsonNode tools = tree(TOOLS);
        for (int seed = 0; seed < 3; seed++) {
            ChatCompletion c = client(gpt).chat().completions().create(chat(gpt, "What is the weather in Paris?",
                    96, seed).putAdditionalBodyProperty("tools", value(TOOLS))
                    .putAdditionalBodyProperty("tool_choice", JsonValue.from("required")).build());
            var choice = c.choices().getFirst();
            // a random model writes its arguments on until the budget closes them: then a length
            assertThat(choice.finishReason().asString()).isIn("tool_calls", "length");
            List<ChatCompletionMessageToolCall> calls = choice.message().toolCalls().orElseThrow();
            assertThat(calls).isNotEmpty();
            for (ChatCompletionMessageToolCall call : calls) {
                var f = call.asFunction();
                assertThat(f.id()).startsWith("call_");
                JsonNode parameters = null;
                for (JsonNode t : tools) {
                    if (t.path("function").path("name").asText().equals(f.function().name())) {
                        parameters = t.path("function").path("parameters");
                    }
                }
                assertThat(parameters).as("called tool %s", f.function().name()).isNotNull();
                assertThat(SchemaCheck.errors(parameters, tree(f.function().arguments()))).isEmpty();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void namedToolChoiceStreamsCallsTheSdkReassembles(boolean gpt) {
        ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
        try (StreamResponse<ChatCompletionChunk> stream = client(gpt).chat().completions().createStreaming(
                chat(gpt, "Add two numbers", 96, 7).putAdditionalBodyProperty("tools", value(TOOLS))
                        .putAdditionalBodyProperty("tool_choice", value("""
                                {"type": "function", "function": {"name": "add"}}""")).build())) {
            stream.stream().forEach(acc::accumulate);
        }
        ChatCompletion c = acc.chatCompletion();
        var choice = c.choices().getFirst();
        assertThat(choice.finishReason().asString()).isIn("tool_calls", "length");
        List<ChatCompletionMessageToolCall> calls = choice.message().toolCalls().orElseThrow();
        assertThat(calls).hasSize(1);
        var f = calls.getFirst().asFunction();
        assertThat(f.function().name()).isEqualTo("add");
        JsonNode parameters = tree(TOOLS).get(1).path("function").path("parameters");
        assertThat(SchemaCheck.errors(parameters, tree(f.function().arguments()))).isEmpty();
    }

    /** Several choices each keep to the schema: each has a constraint of its own, following its own reply. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void everyChoiceKeepsToTheSchema(boolean gpt) {
        ChatCompletion c = (gpt ? gptOssClient : qwenClient).chat().completions().create(
                chat(gpt, "Some items", 96, 5).n(3L).putAdditionalBodyProperty("response_format", value("""
                        {"type": "json_schema", "json_schema": {"name": "c", "schema": %s}}""".formatted(
                        SCHEMAS.get(3)))).build());
        assertThat(c.choices()).hasSize(3);
        for (ChatCompletion.Choice choice : c.choices()) {
            String content = choice.message().content().orElseThrow();
            assertThat(SchemaCheck.errors(tree(SCHEMAS.get(3)), tree(content))).as(content).isEmpty();
        }
    }

    @Test
    void streamedJsonReassemblesWithReasoningApart() {
        ChatCompletionAccumulator acc = ChatCompletionAccumulator.create();
        StringBuilder reasoning = new StringBuilder();
        try (StreamResponse<ChatCompletionChunk> stream = gptOssClient.chat().completions().createStreaming(
                chat(true, "A colour", 72, 3).putAdditionalBodyProperty("response_format", value("""
                        {"type": "json_schema", "json_schema": {"name": "c", "schema": %s}}""".formatted(
                        SCHEMAS.get(1)))).build())) {
            stream.stream().forEach(chunk -> {
                acc.accumulate(chunk);
                chunk.choices().forEach(ch -> {
                    JsonValue r = ch.delta()._additionalProperties().get("reasoning_content");
                    if (r != null) {
                        reasoning.append(String.valueOf(r.asString().orElse("")));
                    }
                });
            });
        }
        String content = acc.chatCompletion().choices().getFirst().message().content().orElseThrow();
        assertThat(SchemaCheck.errors(tree(SCHEMAS.get(1)), tree(content))).isEmpty();
        assertThat(reasoning.toString()).isNotEmpty().doesNotContain("<|");
    }

    private static HttpResponse<String> post(OpenAiServer server, String body) throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            return http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port()
                            + "/v1/chat/completions")).header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    /** A function call's output as a Responses input item. */
    private static com.openai.models.responses.ResponseInputItem callOutput(
            com.openai.models.responses.ResponseFunctionToolCall call, String output) {
        return com.openai.models.responses.ResponseInputItem.ofFunctionCallOutput(
                com.openai.models.responses.ResponseInputItem.FunctionCallOutput.builder().callId(call.callId())
                        .output(output).build());
    }

    /** TOOLS as the Responses API writes function tools (flat). */
    private static List<com.openai.models.responses.FunctionTool> flatTools() {
        List<com.openai.models.responses.FunctionTool> out = new ArrayList<>();
        for (JsonNode t : tree(TOOLS)) {
            JsonNode f = t.get("function");
            var parameters = com.openai.models.responses.FunctionTool.Parameters.builder();
            f.get("parameters").properties().forEach(e -> parameters.putAdditionalProperty(e.getKey(),
                    JsonValue.from(JSON.convertValue(e.getValue(), Object.class))));
            out.add(com.openai.models.responses.FunctionTool.builder().name(f.get("name").asText())
                    .description(f.get("description").asText()).parameters(parameters.build()).strict((Boolean) null)
                    .build());
        }
        return out;
    }

    private static String reasoningOf(com.openai.models.responses.Response r) {
        StringBuilder text = new StringBuilder();
        for (var item : r.output()) {
            item.reasoning().ifPresent(x -> x.content().orElse(List.of()).forEach(c -> text.append(c.text())));
        }
        return text.toString();
    }

    /**
     * The Responses API calls tools as chat completions do: a forced call, greedy, gives the same reasoning and the
     * same arguments, whole and streamed; a second turn of input items (the call and its output) reads as the chat
     * messages of the same turn (the same prompt and answer).
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void responsesCallToolsAsChatDoes(boolean gpt) throws Exception {
        String user = "Add two numbers";
        HttpResponse<String> raw = post(gpt ? gptOssServer : qwenServer, """
                {"model": "%s", "max_tokens": 96, "temperature": 0, "messages": [{"role": "user", "content": "%s"}],
                 "tools": %s, "tool_choice": {"type": "function", "function": {"name": "add"}}}"""
                .formatted(id(gpt), user, TOOLS));
        assertThat(raw.statusCode()).as(raw.body()).isEqualTo(200);
        JsonNode chatMessage = tree(raw.body()).path("choices").get(0).path("message");
        JsonNode chatCall = chatMessage.path("tool_calls").get(0).path("function");
        var builder = com.openai.models.responses.ResponseCreateParams.builder().model(id(gpt)).input(user)
                .temperature(0.0).maxOutputTokens(96)
                .toolChoice(com.openai.models.responses.ToolChoiceFunction.builder().name("add").build());
        flatTools().forEach(builder::addTool);
        var params = builder.build();
        var r = client(gpt).responses().create(params);
        r.validate();
        var call = r.output().stream().filter(com.openai.models.responses.ResponseOutputItem::isFunctionCall)
                .map(com.openai.models.responses.ResponseOutputItem::asFunctionCall).findFirst().orElseThrow();
        assertThat(call.name()).isEqualTo("add");
        assertThat(call.arguments()).isEqualTo(chatCall.path("arguments").asText());
        assertThat(reasoningOf(r)).isEqualTo(chatMessage.path("reasoning_content").asText(""));
        var details = r.usage().orElseThrow().outputTokensDetails();
        if (reasoningOf(r).isEmpty()) {
            assertThat(details.reasoningTokens()).isZero();
        } else {
            // the reasoning's text encoded: within the reply's tokens
            assertThat(details.reasoningTokens()).isPositive()
                    .isLessThanOrEqualTo(r.usage().orElseThrow().outputTokens());
        }
        List<com.openai.models.responses.ResponseStreamEvent> events = new ArrayList<>();
        try (var stream = client(gpt).responses().createStreaming(params)) {
            stream.stream().forEach(events::add);
        }
        events.forEach(com.openai.models.responses.ResponseStreamEvent::validate);
        StringBuilder streamedReasoning = new StringBuilder();
        String streamedArguments = null;
        for (var e : events) {
            e.reasoningTextDelta().ifPresent(d -> streamedReasoning.append(d.delta()));
            if (e.isFunctionCallArgumentsDone()) {
                streamedArguments = e.asFunctionCallArgumentsDone().arguments();
            }
        }
        assertThat(streamedArguments).isEqualTo(call.arguments());
        assertThat(streamedReasoning.toString()).isEqualTo(reasoningOf(r));
        var last = events.getLast();
        var fin = last.isCompleted() ? last.asCompleted().response() : last.asIncomplete().response();
        assertThat(fin.output()).hasSize(r.output().size());

        // the next turn: the call and its output as input items, against the same chat messages
        String roundTrip = """
                [{"role": "user", "content": "%s"},
                 {"role": "assistant", "content": null, "tool_calls": [{"id": "%s", "type": "function",
                   "function": {"name": "add", "arguments": %s}}]},
                 {"role": "tool", "tool_call_id": "%s", "content": "5"}]"""
                .formatted(user, call.callId(), JSON.writeValueAsString(call.arguments()), call.callId());
        HttpResponse<String> chat2 = post(gpt ? gptOssServer : qwenServer, """
                {"model": "%s", "max_tokens": 12, "temperature": 0, "messages": %s, "tools": %s}"""
                .formatted(id(gpt), roundTrip, TOOLS));
        assertThat(chat2.statusCode()).as(chat2.body()).isEqualTo(200);
        var next = com.openai.models.responses.ResponseCreateParams.builder().model(id(gpt)).temperature(0.0)
                .maxOutputTokens(12).inputOfResponse(List.of(
                        com.openai.models.responses.ResponseInputItem.ofEasyInputMessage(
                                com.openai.models.responses.EasyInputMessage.builder()
                                        .role(com.openai.models.responses.EasyInputMessage.Role.USER).content(user)
                                        .build()),
                        com.openai.models.responses.ResponseInputItem.ofFunctionCall(call),
                        callOutput(call, "5")));
        flatTools().forEach(next::addTool);
        var r2 = client(gpt).responses().create(next.build());
        r2.validate();
        JsonNode c2 = tree(chat2.body());
        assertThat(r2.usage().orElseThrow().inputTokens()).isEqualTo(c2.path("usage").path("prompt_tokens").asLong());
        assertThat(r2.usage().orElseThrow().outputTokens())
                .isEqualTo(c2.path("usage").path("completion_tokens").asLong());
        StringBuilder answer = new StringBuilder();
        for (var item : r2.output()) {
            item.message().ifPresent(m -> m.content().forEach(c -> answer.append(c.asOutputText().text())));
        }
        assertThat(answer.toString()).isEqualTo(c2.path("choices").get(0).path("message").path("content").asText(""));

        // the same turn by previous_response_id: the stored conversation (the call, and its reasoning) comes first
        var byId = com.openai.models.responses.ResponseCreateParams.builder().model(id(gpt)).temperature(0.0)
                .maxOutputTokens(12).previousResponseId(r.id()).inputOfResponse(List.of(
                        callOutput(call, "5")));
        flatTools().forEach(byId::addTool);
        var r3 = client(gpt).responses().create(byId.build());
        r3.validate();
        var stored = (com.fasterxml.jackson.databind.node.ArrayNode) tree(roundTrip);
        if (!reasoningOf(r).isEmpty()) {
            ((com.fasterxml.jackson.databind.node.ObjectNode) stored.get(1)).put("reasoning_content", reasoningOf(r));
        }
        HttpResponse<String> chat3 = post(gpt ? gptOssServer : qwenServer, """
                {"model": "%s", "max_tokens": 12, "temperature": 0, "messages": %s, "tools": %s}"""
                .formatted(id(gpt), stored, TOOLS));
        assertThat(chat3.statusCode()).as(chat3.body()).isEqualTo(200);
        assertThat(r3.usage().orElseThrow().inputTokens())
                .isEqualTo(tree(chat3.body()).path("usage").path("prompt_tokens").asLong());
    }

    private static final String ROUND_TRIP = """
            [{"role": "user", "content": "Weather in Paris?"},
             {"role": "assistant", "content": null, "tool_calls": [{"id": "call_abc", "type": "function",
               "function": {"name": "get_weather", "arguments": "{\\"city\\": \\"Paris\\"}"}}]},
             {"role": "tool", "tool_call_id": "call_abc", "content": "18 degrees and sunny"}]
            """;

    /** An assistant turn with calls and the tool's answer render into the next prompt, in each family's markup. */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void toolMessagesRoundTripIntoThePrompt(boolean gpt) throws Exception {
        HttpResponse<String> r = post(gpt ? gptOssServer : qwenServer, """
                {"model": "%s", "max_tokens": 4, "messages": %s, "tools": %s}""".formatted(id(gpt), ROUND_TRIP, TOOLS));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<ChatMessage> messages = new ArrayList<>();
        for (JsonNode m : tree(ROUND_TRIP)) {
            messages.add(new ChatMessage(m.get("role").asText(), m.path("content").isTextual()
                    ? m.get("content").asText() : null, m));
        }
        String prompt = new ModelText(gpt ? gptOss : qwen).renderChatText(new ChatPrompt(messages, tree(TOOLS)));
        assertThat(prompt).contains("18 degrees and sunny").contains("get_weather");
        if (gpt) {
            assertThat(prompt).contains("to=functions.get_weather").contains("{\"city\": \"Paris\"}<|call|>")
                    .contains("<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>"
                            + "\"18 degrees and sunny\"");
        } else {
            assertThat(prompt).contains("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}")
                    .contains("<tool_response>\n18 degrees and sunny\n</tool_response>");
        }
    }

    /**
     * OpenAI makes a tool's description optional; gpt-oss's template writes it unconditionally (transformers raises
     * on the undefined value), so the server gives it an empty one, and Qwen3's template gets the tool as sent.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void aToolWithoutDescriptionIsServed(boolean gpt) throws Exception {
        String tools = """
                [{"type": "function", "function": {"name": "lookup",
                   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]""";
        HttpResponse<String> r = post(gpt ? gptOssServer : qwenServer, """
                {"model": "%s", "max_tokens": 3, "messages": [{"role": "user", "content": "find x"}], "tools": %s}"""
                .formatted(id(gpt), tools));
        assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
        List<ChatMessage> messages = List.of(new ChatMessage("user", "find x",
                tree("{\"role\": \"user\", \"content\": \"find x\"}")));
        String prompt = new ModelText(gpt ? gptOss : qwen).renderChatText(new ChatPrompt(messages, tree(tools)));
        if (gpt) {
            assertThat(prompt).contains("namespace functions {\n\n// \ntype lookup = (_: {\nq: string,\n}) => any;");
        } else {
            assertThat(prompt).contains("\"name\": \"lookup\"").doesNotContain("description");
        }
    }

    /**
     * gpt-oss's sliding-window layers through kept sequences: each greedy reply (raw, special tokens kept) is what
     * the library generates for the same prompt in a fresh session, the second turn continuing a kept sequence.
     */
    @Test
    void keptSequencesAnswerAsFreshOnesOnSlidingWindows() throws Exception {
        ModelText text = new ModelText(gptOss);
        List<ChatMessage> turn = new ArrayList<>(List.of(new ChatMessage("user", "Name a colour",
                tree("{\"role\": \"user\", \"content\": \"Name a colour\"}"))));
        long cachedBefore = cachedTokens();
        for (int round = 0; round < 2; round++) {
            int[] prompt = text.renderChat(new ChatPrompt(turn, null));
            String body = JSON.createObjectNode().put("model", id(true)).put("max_tokens", 10).put("temperature", 0)
                    .put("skip_special_tokens", false).set("prompt", JSON.valueToTree(prompt)).toString();
            HttpResponse<String> r;
            try (HttpClient http = HttpClient.newHttpClient()) {
                r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gptOssServer.port()
                                + "/v1/completions")).header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
            }
            assertThat(r.statusCode()).as(r.body()).isEqualTo(200);
            String served = tree(r.body()).get("choices").get(0).get("text").asText();
            String library;
            try (var session = gptOss.model().newSession()) {
                library = new io.moe4j.generate.Generator(gptOss.tokenizer()).generate(session, prompt,
                        new io.moe4j.generate.GenerationRequest(10, io.moe4j.generate.SamplingParams.greedy(),
                                List.of(), gptOss.eosIds()), p -> { }, () -> false).text();
            }
            assertThat(served).as("round %d", round).isEqualTo(library);
            turn.add(new ChatMessage("assistant", "Blue.", tree("{\"role\": \"assistant\", \"content\": \"Blue.\"}")));
            turn.add(new ChatMessage("user", "And another?", tree("{\"role\": \"user\", \"content\": \"And another?\"}")));
        }
        assertThat(cachedTokens()).as("the turns continued kept sequences").isGreaterThan(cachedBefore);
    }

    private static long cachedTokens() throws Exception {
        try (HttpClient http = HttpClient.newHttpClient()) {
            String metrics = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + gptOssServer.port()
                    + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            return metrics.lines().filter(l -> l.startsWith("moe4j_prompt_tokens_cached_total "))
                    .mapToLong(l -> Long.parseLong(l.substring(l.indexOf(' ') + 1).strip())).findFirst().orElse(-1);
        }
    }

    @Test
    void reasoningEffortReachesTheTemplate() {
        List<ChatMessage> messages = List.of(new ChatMessage("user", "hi", tree("{\"role\": \"user\", \"content\": \"hi\"}")));
        String prompt = new ModelText(gptOss).renderChatText(new ChatPrompt(messages, null,
                Map.of("reasoning_effort", JSON.getNodeFactory().textNode("high"))));
        assertThat(prompt).contains("Reasoning: high");
    }

    @Test
    void badInputIsRefusedNamingTheField() throws Exception {
        String unknownTool = """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "x"}], "tools": %s,
                 "tool_choice": {"type": "function", "function": {"name": "fly"}}}""".formatted(TOOLS);
        assertRefused(post(qwenServer, unknownTool), "tool_choice", "fly");
        String orphan = """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "x"},
                 {"role": "tool", "tool_call_id": "call_none", "content": "42"}]}""";
        assertRefused(post(qwenServer, orphan), "messages[1].tool_call_id", "call_none");
        String badSchema = """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "x"}],
                 "response_format": {"type": "json_schema", "json_schema": {"name": "x",
                   "schema": {"type": "object", "patternProperties": {"^a": {"type": "string"}}}}}}""";
        assertRefused(post(qwenServer, badSchema), "response_format", "patternProperties");
        String tooShort = """
                {"model": "gpt-oss-random", "messages": [{"role": "user", "content": "x"}], "max_tokens": 3,
                 "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": %s}}}"""
                .formatted(SCHEMAS.getFirst());
        assertRefused(post(gptOssServer, tooShort), "max_tokens", "max_tokens");
        String requiredWithoutTools = """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required"}""";
        assertRefused(post(qwenServer, requiredWithoutTools), "tool_choice", "tools");
        String badParameter = """
                {"model": "qwen3-random", "messages": [{"role": "user", "content": "x"}], "tool_choice": "required",
                 "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
                   "properties": {"a": {"type": "string", "pattern": "^(?=x)"}}}}}]}""";
        assertRefused(post(qwenServer, badParameter), "tools[0].function.parameters",
                "tools[0].function.parameters.properties.a");
    }

    private static void assertRefused(HttpResponse<String> r, String param, String mentioned) {
        assertThat(r.statusCode()).as(r.body()).isEqualTo(400);
        JsonNode error = tree(r.body()).path("error");
        assertThat(error.path("param").asText()).as(r.body()).startsWith(param);
        assertThat(error.path("message").asText()).contains(mentioned);
    }
}

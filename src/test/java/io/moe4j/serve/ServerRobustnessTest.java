package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** Bad requests of many kinds, fuzzed bodies and vanishing clients: each gets its error, the server goes on. */
@Timeout(60)
class ServerRobustnessTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String CHAT = "/v1/chat/completions";
    private static final String TEXT = "/v1/completions";
    private static ToyModel model;
    private static OpenAiServer server;
    private static HttpClient http;

    @BeforeAll
    static void start() {
        model = new ToyModel(128, 0, 200_000, 0);
        ServerConfig config = new ServerConfig("127.0.0.1", 0, null, 64 * 1024, Duration.ofSeconds(5),
                Duration.ofSeconds(5));
        server = new OpenAiServer(new ServedModel("toy", model, new ByteText()), new SchedulerConfig(4, 8, 64),
                config).start();
        http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    }

    @AfterAll
    static void stop() {
        http.close();
        server.close();
    }

    private static HttpResponse<String> send(String method, String path, byte[] body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + server.port() + path))
                .timeout(Duration.ofSeconds(20)).header("Content-Type", "application/json");
        b.method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofByteArray(body));
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> post(String path, String body) throws Exception {
        return send("POST", path, body.getBytes(StandardCharsets.UTF_8));
    }

    /** A valid chat body with one field replaced (null value: removed). */
    private static String chatWith(String field, Object value) {
        ObjectNode body = JSON.createObjectNode().put("model", "toy").put("max_tokens", 4).put("temperature", 0);
        body.putArray("messages").addObject().put("role", "user").put("content", "hi");
        if (value == null) {
            body.remove(field);
        } else {
            body.set(field, JSON.valueToTree(value));
        }
        return body.toString();
    }

    private static void assertError(HttpResponse<String> r, int status, String param, String what) throws Exception {
        assertThat(r.statusCode()).as(what + ": " + r.body()).isEqualTo(status);
        JsonNode error = JSON.readTree(r.body()).get("error");
        assertThat(error).as(what).isNotNull();
        assertThat(error.get("message").isTextual()).as(what).isTrue();
        assertThat(error.get("message").asText()).as(what).isNotBlank();
        assertThat(error.get("type").isTextual()).as(what).isTrue();
        assertThat(error.has("param") && error.has("code")).as(what).isTrue();
        if (param != null) {
            assertThat(error.get("param").asText()).as(what + ": " + r.body()).isEqualTo(param);
        }
    }

    @Test
    void aGetOfAGenerationRouteIsAMethodNotAllowed() throws Exception {
        for (String path : List.of(CHAT, "/v1/completions")) {
            HttpResponse<String> r = send("GET", path, null);
            assertError(r, 405, null, "GET " + path);
            assertThat(r.headers().firstValue("Allow")).hasValue("POST");
        }
        assertStillServing();
    }

    private static void assertStillServing() throws Exception {
        HttpResponse<String> ok = post(CHAT, chatWith("max_tokens", 2));
        assertThat(ok.statusCode()).as(ok.body()).isEqualTo(200);
        assertThat(JSON.readTree(ok.body()).at("/choices/0/message/content").asText()).hasSize(2);
    }

    @Test
    void everyKindOfBadRequestGetsItsError() throws Exception {
        Map<String, Object[]> cases = new LinkedHashMap<>();
        // name -> {path, body, status, param}
        cases.put("malformed JSON", new Object[] {CHAT, "{\"model\": \"toy\", ", 400, null});
        cases.put("empty body", new Object[] {CHAT, "", 400, null});
        cases.put("array body", new Object[] {CHAT, "[1, 2]", 400, null});
        cases.put("string body", new Object[] {CHAT, "\"hello\"", 400, null});
        cases.put("trailing tokens", new Object[] {CHAT, chatWith("n", 1) + " {}", 400, null});
        cases.put("duplicate key", new Object[] {CHAT, "{\"model\":\"toy\",\"model\":\"toy\",\"messages\":[]}", 400, null});
        cases.put("deep nesting", new Object[] {CHAT, "[".repeat(5000) + "]".repeat(5000), 400, null});
        cases.put("missing model", new Object[] {CHAT, chatWith("model", null), 400, "model"});
        cases.put("model not a string", new Object[] {CHAT, chatWith("model", 42), 400, "model"});
        cases.put("unknown model", new Object[] {CHAT, chatWith("model", "gpt-5"), 404, "model"});
        cases.put("missing messages", new Object[] {CHAT, chatWith("messages", null), 400, "messages"});
        cases.put("messages not an array", new Object[] {CHAT, chatWith("messages", "hi"), 400, "messages"});
        cases.put("messages empty", new Object[] {CHAT, chatWith("messages", List.of()), 400, "messages"});
        cases.put("message not an object", new Object[] {CHAT, chatWith("messages", List.of("hi")), 400, "messages[0]"});
        cases.put("role missing", new Object[] {CHAT, chatWith("messages", List.of(Map.of("content", "x"))), 400,
                "messages[0].role"});
        cases.put("role unknown", new Object[] {CHAT, chatWith("messages", List.of(Map.of("role", "robot",
                "content", "x"))), 400, "messages[0].role"});
        cases.put("content a number", new Object[] {CHAT, chatWith("messages", List.of(Map.of("role", "user",
                "content", 5))), 400, "messages[0].content"});
        cases.put("content part not text", new Object[] {CHAT, chatWith("messages", List.of(Map.of("role", "user",
                "content", List.of(Map.of("type", "image_url", "image_url", Map.of("url", "x")))))), 400,
                "messages[0].content[0].type"});
        cases.put("max_tokens a string", new Object[] {CHAT, chatWith("max_tokens", "ten"), 400, "max_tokens"});
        cases.put("max_tokens zero", new Object[] {CHAT, chatWith("max_tokens", 0), 400, "max_tokens"});
        cases.put("max_tokens too big for int", new Object[] {CHAT, chatWith("max_tokens", 1L << 40), 400, "max_tokens"});
        // The toy's context holds 128 tokens: a reply of 127 after a prompt of more than one does not fit.
        cases.put("max_tokens past the context", new Object[] {CHAT, chatWith("max_tokens", 127), 400, "max_tokens"});
        cases.put("vLLM's guided_grammar", new Object[] {CHAT, chatWith("guided_grammar", "root ::= \"a\""), 400,
                "guided_grammar"});
        cases.put("guided_regex malformed", new Object[] {CHAT, chatWith("guided_regex", "(ab"), 400,
                "guided_regex"});
        cases.put("guided_regex not a string", new Object[] {CHAT, chatWith("guided_regex", 7), 400,
                "guided_regex"});
        cases.put("guided_choice empty", new Object[] {CHAT, chatWith("guided_choice", List.of()), 400,
                "guided_choice"});
        cases.put("guided_choice with a number", new Object[] {CHAT, chatWith("guided_choice", List.of("a", 1)), 400,
                "guided_choice"});
        cases.put("guided_json a string that is not JSON", new Object[] {CHAT, chatWith("guided_json", "{type"), 400,
                "guided_json"});
        cases.put("two guided kinds", new Object[] {CHAT, chatWith("guided_regex", "a+").replace("{",
                "{\"guided_choice\": [\"a\"],"), 400, "guided_choice"});
        cases.put("guided beside response_format", new Object[] {CHAT, chatWith("guided_regex", "a+").replace("{",
                "{\"response_format\": {\"type\": \"json_object\"},"), 400, "guided_regex"});
        cases.put("structured_outputs with two kinds", new Object[] {CHAT, chatWith("structured_outputs",
                Map.of("regex", "a+", "choice", List.of("a"))), 400, "structured_outputs"});
        cases.put("structured_outputs unknown key", new Object[] {CHAT, chatWith("structured_outputs",
                Map.of("regex", "a+", "whitespace_pattern", " ")), 400, "structured_outputs.whitespace_pattern"});
        cases.put("structured_outputs grammar", new Object[] {CHAT, chatWith("structured_outputs",
                Map.of("grammar", "root ::= \"a\"")), 400, "structured_outputs.grammar"});
        cases.put("vLLM's structural_tag", new Object[] {CHAT, chatWith("structural_tag", "{}"), 400,
                "structural_tag"});
        cases.put("guided_json enum with a lone surrogate", new Object[] {CHAT, chatWith("guided_json",
                Map.of("enum", List.of("a\uD800b"))), 400, "guided_json"});
        cases.put("guided_regex nested too deep", new Object[] {CHAT, chatWith("guided_regex",
                "(".repeat(20000) + "a" + ")".repeat(20000)), 400, "guided_regex"});
        cases.put("tools on completions", new Object[] {"/v1/completions",
                "{\"model\": \"toy\", \"prompt\": \"hi\", \"tools\": []}", 400, "tools"});
        cases.put("max_completion_tokens fractional", new Object[] {CHAT, chatWith("max_completion_tokens", 2.5), 400,
                "max_completion_tokens"});
        cases.put("temperature a string", new Object[] {CHAT, chatWith("temperature", "hot"), 400, "temperature"});
        cases.put("temperature negative", new Object[] {CHAT, chatWith("temperature", -1), 400, "temperature"});
        cases.put("temperature overflow", new Object[] {CHAT, chatWith("temperature", null).replace("{", "{\"temperature\":1e999,"), 400, "temperature"});
        cases.put("top_p zero", new Object[] {CHAT, chatWith("top_p", 0), 400, "top_p"});
        cases.put("top_p above one", new Object[] {CHAT, chatWith("top_p", 1.5), 400, "top_p"});
        cases.put("seed fractional", new Object[] {CHAT, chatWith("seed", 1.5), 400, "seed"});
        cases.put("stop a number", new Object[] {CHAT, chatWith("stop", 7), 400, "stop"});
        cases.put("stop list with a number", new Object[] {CHAT, chatWith("stop", List.of("a", 1)), 400, "stop"});
        cases.put("too many stops", new Object[] {CHAT, chatWith("stop", java.util.Collections.nCopies(40, "x")), 400, "stop"});
        cases.put("stream a string", new Object[] {CHAT, chatWith("stream", "yes"), 400, "stream"});
        cases.put("stream_options without stream", new Object[] {CHAT, chatWith("stream_options",
                Map.of("include_usage", true)), 400, "stream_options"});
        cases.put("vLLM's allowed_token_ids", new Object[] {CHAT, chatWith("allowed_token_ids", List.of(97)), 400,
                "allowed_token_ids"});
        cases.put("ignore_eos a string", new Object[] {CHAT, chatWith("ignore_eos", "yes"), 400, "ignore_eos"});
        cases.put("min_tokens negative", new Object[] {CHAT, chatWith("min_tokens", -1), 400, "min_tokens"});
        cases.put("min_tokens beside json", new Object[] {CHAT, chatWith("min_tokens", 3).replace("{",
                "{\"response_format\": {\"type\": \"json_object\"},"), 400, "min_tokens"});
        cases.put("min_tokens past max_tokens", new Object[] {CHAT, chatWith("min_tokens", 5), 400, "min_tokens"});
        cases.put("ignore_eos beside json", new Object[] {CHAT, chatWith("ignore_eos", true).replace("{",
                "{\"response_format\": {\"type\": \"json_object\"},"), 400, "ignore_eos"});
        cases.put("min_tokens past an int", new Object[] {CHAT, chatWith("min_tokens", 1099511627776L), 400,
                "min_tokens"});
        cases.put("stop_token_ids beyond the vocabulary", new Object[] {CHAT, chatWith("stop_token_ids",
                List.of(5, 999999)), 400, "stop_token_ids"});
        cases.put("vLLM's prompt_logprobs of the whole vocabulary", new Object[] {CHAT, chatWith("prompt_logprobs",
                -1), 400, "prompt_logprobs"});
        cases.put("completion top_logprobs", new Object[] {TEXT,
                "{\"model\":\"toy\",\"prompt\":\"a\",\"top_logprobs\":2}", 400, "top_logprobs"});
        cases.put("n past the queue", new Object[] {CHAT, chatWith("n", 9), 400, "n"});
        cases.put("n past the most", new Object[] {CHAT, chatWith("n", 17), 400, "n"});
        cases.put("n of zero", new Object[] {CHAT, chatWith("n", 0), 400, "n"});
        cases.put("logprobs a number on chat", new Object[] {CHAT, chatWith("logprobs", 3), 400, "logprobs"});
        cases.put("top_logprobs without logprobs", new Object[] {CHAT, chatWith("top_logprobs", 2), 400,
                "top_logprobs"});
        cases.put("completion logprobs past 20", new Object[] {TEXT,
                "{\"model\":\"toy\",\"prompt\":\"a\",\"logprobs\":21}", 400, "logprobs"});
        cases.put("presence penalty past 2", new Object[] {CHAT, chatWith("presence_penalty", 2.5), 400,
                "presence_penalty"});
        cases.put("frequency penalty a string", new Object[] {CHAT, chatWith("frequency_penalty", "x"), 400,
                "frequency_penalty"});
        cases.put("repetition penalty zero", new Object[] {CHAT, chatWith("repetition_penalty", 0), 400,
                "repetition_penalty"});
        cases.put("logit bias past 100", new Object[] {CHAT, chatWith("logit_bias", Map.of("65", 101)), 400,
                "logit_bias"});
        cases.put("logit bias of a word", new Object[] {CHAT, chatWith("logit_bias", Map.of("hello", 1)), 400,
                "logit_bias"});
        cases.put("logit bias beyond the vocabulary", new Object[] {CHAT, chatWith("logit_bias",
                Map.of("99999999", 1)), 400, "logit_bias"});
        cases.put("logit bias a list", new Object[] {CHAT, chatWith("logit_bias", List.of(1)), 400, "logit_bias"});
        cases.put("json schema output", new Object[] {CHAT, chatWith("response_format", Map.of("type", "json_schema")),
                400, "response_format"});
        cases.put("tool_choice required", new Object[] {CHAT, chatWith("tool_choice", "required"), 400, "tool_choice"});
        cases.put("chat_template_kwargs not an object", new Object[] {CHAT, chatWith("chat_template_kwargs", "x"), 400,
                "chat_template_kwargs"});
        cases.put("reasoning_effort not a string", new Object[] {CHAT, chatWith("reasoning_effort", 3), 400,
                "reasoning_effort"});
        cases.put("reasoning_effort unknown", new Object[] {CHAT, chatWith("reasoning_effort", "extreme"), 400,
                "reasoning_effort"});
        cases.put("tools not an array", new Object[] {CHAT, chatWith("tools", Map.of("type", "function")), 400, "tools"});
        cases.put("prompt over the context", new Object[] {CHAT, chatWith("messages", List.of(Map.of("role", "user",
                "content", "y".repeat(200)))), 400, "messages"});
        cases.put("body too large", new Object[] {CHAT, chatWith("messages", List.of(Map.of("role", "user",
                "content", "z".repeat(70_000)))), 413, null});
        cases.put("tool parameters not a schema", new Object[] {CHAT, chatWith("tools", List.of(Map.of("type",
                "function", "function", Map.of("name", "f", "parameters", "x")))), 400, "tools[0].function.parameters"});
        cases.put("two tools of one name", new Object[] {CHAT, chatWith("tools", List.of(
                Map.of("type", "function", "function", Map.of("name", "f")),
                Map.of("type", "function", "function", Map.of("name", "f")))), 400, "tools[1].function.name"});
        cases.put("tools with auto on a model without a tool-call parser", new Object[] {CHAT, chatWith("tools",
                List.of(Map.of("type", "function", "function", Map.of("name", "f")))), 400, "tool_choice"});
        cases.put("completion prompt missing", new Object[] {TEXT, "{\"model\":\"toy\"}", 400, "prompt"});
        cases.put("completion prompt an object", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":{}}", 400, "prompt"});
        cases.put("completion of mixed prompts", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":[\"a\",[1]]}", 400,
                "prompt"});
        cases.put("completion prompts past the queue", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":[\"a\",\"b\","
                + "\"c\"],\"n\":3}", 400, "prompt"});
        cases.put("completion prompt of a batch over the context", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":"
                + "[\"a\",\"" + "y".repeat(200) + "\"]}", 400, "prompt[1]"});
        cases.put("completion ids outside the vocabulary", new Object[] {TEXT,
                "{\"model\":\"toy\",\"prompt\":[1,2,999999]}", 400, "prompt"});
        cases.put("completion empty prompt", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":\"\"}", 400, "prompt"});
        cases.put("completion max_tokens 0 without echo", new Object[] {TEXT,
                "{\"model\":\"toy\",\"prompt\":\"a\",\"max_tokens\":0}", 400, "max_tokens"});
        cases.put("chat echo", new Object[] {CHAT, chatWith("echo", true), 400, "echo"});
        cases.put("completion best_of", new Object[] {TEXT, "{\"model\":\"toy\",\"prompt\":\"a\",\"best_of\":3}", 400, "best_of"});
        cases.put("unknown path", new Object[] {"/v1/embeddings", "{}", 404, null});
        int kinds = 0;
        for (Map.Entry<String, Object[]> c : cases.entrySet()) {
            Object[] v = c.getValue();
            assertError(post((String) v[0], (String) v[1]), (Integer) v[2], (String) v[3], c.getKey());
            kinds++;
        }
        assertError(send("GET", CHAT, null), 405, null, "GET on a POST route");
        assertError(send("POST", CHAT, new byte[] {'{', '"', (byte) 0xff, (byte) 0xfe, '"', ':', '1', '}'}), 400, null,
                "invalid UTF-8");
        assertThat(kinds + 2).isGreaterThanOrEqualTo(20);
        assertStillServing();
        HttpResponse<String> metrics = send("GET", "/metrics", null);
        assertThat(metrics.body()).contains("moe4j_http_requests_total{route=\"/v1/chat/completions\",status=\"400\"}")
                .contains("moe4j_http_requests_total{route=\"/v1/chat/completions\",status=\"413\"} 1");
        assertThat(send("GET", "/health", null).statusCode()).isEqualTo(200);
    }

    /**
     * A body over the limit gets its 413 every time: the server reads and drops the rest of it first, since closing a
     * connection with the client's bytes unread resets it, and the reset could beat the response (before that, 1-9
     * of 300 such requests saw no response at all on a 2-core machine).
     */
    @Test
    void everyTooLargeBodyGetsItsResponse() throws Exception {
        // on the completions route: the chat route's count of 413s is asserted by another test of this server
        String body = "{\"model\":\"toy\",\"prompt\":\"" + "z".repeat(70_000) + "\"}";
        for (int i = 0; i < 50; i++) {
            assertError(post(TEXT, body), 413, null, "body too large, request " + i);
        }
        assertStillServing();
    }

    @Test
    void fuzzedBodiesGetAnAnswerOrAnErrorNeverAFailure() throws Exception {
        Random random = new Random(20261125);
        String base = chatWith("stop", List.of("zz"));
        List<Object> values = new ArrayList<>(List.of(-1, 0, 1, 2, 3.5, 1e30, "", "x", true, false, List.of(),
                List.of(1, "a"), Map.of(), Map.of("type", "text"), Map.of("role", "user", "content", "q")));
        values.add(null);
        String[] fields = {"model", "messages", "max_tokens", "max_completion_tokens", "temperature", "top_p", "top_k",
                "min_p", "seed", "stop", "stream", "stream_options", "n", "logprobs", "top_logprobs", "tools",
                "tool_choice",
                "response_format", "user", "presence_penalty", "frequency_penalty", "repetition_penalty",
                "logit_bias"};
        Outcomes tally = new Outcomes();
        for (int i = 0; i < 240; i++) {
            byte[] body;
            if (i % 3 == 0) {
                // Byte-level damage: flips, cuts and insertions.
                byte[] b = base.getBytes(StandardCharsets.UTF_8);
                int edits = 1 + random.nextInt(3);
                for (int e = 0; e < edits; e++) {
                    int at = random.nextInt(b.length);
                    switch (random.nextInt(3)) {
                        case 0 -> b[at] = (byte) random.nextInt(256);
                        case 1 -> b = java.util.Arrays.copyOf(b, at);
                        default -> {
                            byte[] longer = new byte[b.length + 1];
                            System.arraycopy(b, 0, longer, 0, at);
                            longer[at] = "{}[]\",:0-e\\ ".getBytes(StandardCharsets.UTF_8)[random.nextInt(12)];
                            System.arraycopy(b, at, longer, at + 1, b.length - at);
                            b = longer;
                        }
                    }
                    if (b.length == 0) {
                        break;
                    }
                }
                body = b;
            } else {
                // Field-level damage: a known field gets a value of any type.
                ObjectNode node = (ObjectNode) JSON.readTree(base);
                int edits = 1 + random.nextInt(2);
                for (int e = 0; e < edits; e++) {
                    String field = fields[random.nextInt(fields.length)];
                    Object value = values.get(random.nextInt(values.size()));
                    node.set(field, JSON.valueToTree(value));
                }
                body = node.toString().getBytes(StandardCharsets.UTF_8);
            }
            HttpResponse<String> r = send("POST", i % 5 == 4 ? TEXT : CHAT, body);
            tally.add(r, "fuzz case " + i + ": " + new String(body, StandardCharsets.UTF_8));
        }
        tally.check(100);
    }

    /** Fuzzed requests' outcomes: each an answer, or a 4xx error object; never anything else. */
    private static final class Outcomes {
        int answered;
        int refused;

        void add(HttpResponse<String> r, String what) throws Exception {
            if (r.statusCode() == 200) {
                answered++;
                return;
            }
            refused++;
            assertThat(r.statusCode()).as(what + " -> " + r.body()).isBetween(400, 499);
            assertError(r, r.statusCode(), null, what);
        }

        /** More than {@code refusedAtLeast} refused, some answered, and the server still serves. */
        void check(int refusedAtLeast) throws Exception {
            assertThat(refused).isGreaterThan(refusedAtLeast);
            assertThat(answered).isPositive();
            assertStillServing();
        }
    }

    /**
     * The Responses API under the same damage, also inside its input items, tools and text format: an answer or a
     * 4xx that names what is wrong, never a failure, and the server serves on.
     */
    @Test
    void fuzzedResponsesBodiesGetAnAnswerOrAnErrorNeverAFailure() throws Exception {
        Random random = new Random(20261129);
        String base = """
                {"model": "toy", "instructions": "be short", "max_output_tokens": 4, "temperature": 0,
                 "input": [{"role": "user", "content": "hi"},
                           {"type": "function_call", "call_id": "call_1", "name": "f", "arguments": "{}"},
                           {"type": "function_call_output", "call_id": "call_1", "output": "ok"},
                           {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}],
                 "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
                 "text": {"format": {"type": "text"}}}""";
        List<Object> values = new ArrayList<>(List.of(-1, 0, 1, 3.5, 1e30, "", "x", "auto", "required", true, false,
                List.of(), List.of(1, "a"), Map.of(), Map.of("type", "function"), Map.of("type", "json_object"),
                Map.of("type", "function", "name", "f"), Map.of("effort", "low"), Map.of("format", Map.of()),
                List.of(Map.of("type", "function_call")), List.of(Map.of("role", "tool", "content", "x")),
                List.of(Map.of("type", "reasoning", "content", List.of(Map.of("type", "x")))),
                List.of("reasoning.encrypted_content"), List.of(Map.of("type", "web_search"))));
        values.add(null);
        String[] fields = {"model", "input", "instructions", "max_output_tokens", "temperature", "top_p", "tools",
                "tool_choice", "text", "reasoning", "stream", "include", "truncation", "metadata", "store",
                "parallel_tool_calls", "previous_response_id", "user", "background", "top_logprobs"};
        Outcomes tally = new Outcomes();
        for (int i = 0; i < 200; i++) {
            JsonNode node = JSON.readTree(base);
            int edits = 1 + random.nextInt(3);
            for (int e = 0; e < edits; e++) {
                JsonNode value = JSON.valueToTree(values.get(random.nextInt(values.size())));
                switch (random.nextInt(4)) {
                    case 0, 1 -> ((ObjectNode) node).set(fields[random.nextInt(fields.length)], value);
                    case 2 -> {
                        // inside an input item
                        JsonNode input = node.get("input");
                        if (input != null && input.isArray() && !input.isEmpty()) {
                            JsonNode item = input.get(random.nextInt(input.size()));
                            if (item.isObject()) {
                                String[] keys = {"type", "role", "content", "call_id", "name", "arguments", "output"};
                                ((ObjectNode) item).set(keys[random.nextInt(keys.length)], value);
                            }
                        }
                    }
                    default -> {
                        // inside the tool or the text format
                        JsonNode target = random.nextBoolean() ? node.path("tools").path(0) : node.path("text")
                                .path("format");
                        if (target.isObject()) {
                            String[] keys = {"type", "name", "parameters", "strict", "schema", "description"};
                            ((ObjectNode) target).set(keys[random.nextInt(keys.length)], value);
                        }
                    }
                }
            }
            tally.add(post("/v1/responses", node.toString()), "fuzz case " + i + ": " + node);
        }
        tally.check(50);
    }

    @Test
    void aQueuedStreamWhoseClientLeftIsDroppedAtTheNextKeepAlive() throws Exception {
        ToyModel slow = new ToyModel(4096, 0, 5_000_000, 0);
        ServerConfig config = new ServerConfig("127.0.0.1", 0, null, 64 * 1024, Duration.ofMillis(50),
                Duration.ofMillis(20));
        try (OpenAiServer s = new OpenAiServer(new ServedModel("toy", slow, new ByteText()),
                new SchedulerConfig(1, 4, 64), config).start()) {
            URI uri = URI.create("http://127.0.0.1:" + s.port() + CHAT);
            // The only slot: busy for about 5 s.
            var busy = http.sendAsync(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(
                    chatWith("max_tokens", 1000))).build(), HttpResponse.BodyHandlers.ofString());
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (s.scheduler().activeSequences() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
            String streamed = chatWith("max_tokens", 5).replace("\"temperature\":0",
                    "\"temperature\":0,\"stream\":true");
            HttpResponse<InputStream> r = http.send(HttpRequest.newBuilder(uri)
                    .POST(HttpRequest.BodyPublishers.ofString(streamed)).build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                assertThat(in.readLine()).startsWith("data: {");
                assertThat(s.scheduler().queueLength()).isEqualTo(1);
            }
            // The request leaves the queue, then its end is counted: wait for both.
            String aborted = "moe4j_sequences_finished_total{reason=\"abort\"} 1";
            deadline = System.nanoTime() + 3_000_000_000L;
            while ((s.scheduler().queueLength() > 0 || !s.metrics().prometheus().contains(aborted))
                    && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(s.scheduler().queueLength()).as("the queued request left with its client").isZero();
            assertThat(busy.isDone()).as("while the first still runs").isFalse();
            assertThat(s.metrics().prometheus()).contains(aborted);
        }
    }

    @Test
    void shutdownEndsRunningStreamsCleanlyAndRefusesNewRequests() throws Exception {
        ToyModel slow = new ToyModel(4096, 0, 5_000_000, 0);
        ServerConfig config = new ServerConfig("127.0.0.1", 0, null, 64 * 1024, Duration.ofMillis(300),
                Duration.ofSeconds(5));
        OpenAiServer s = new OpenAiServer(new ServedModel("toy", slow, new ByteText()), SchedulerConfig.defaults(),
                config).start();
        URI uri = URI.create("http://127.0.0.1:" + s.port() + CHAT);
        String streamed = chatWith("max_tokens", 2000).replace("\"temperature\":0",
                "\"temperature\":0,\"stream\":true");
        var stream = http.sendAsync(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(streamed))
                .build(), HttpResponse.BodyHandlers.ofString());
        var quick = http.sendAsync(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(
                chatWith("max_tokens", 10))).build(), HttpResponse.BodyHandlers.ofString());
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (slow.openSequences() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(2);
        }
        Thread closer = Thread.ofVirtual().start(s::close);
        Thread.sleep(100);
        // During the grace period new work is refused with 503 and an error object.
        HttpResponse<String> late = http.send(HttpRequest.newBuilder(uri).POST(HttpRequest.BodyPublishers.ofString(
                chatWith("max_tokens", 2))).build(), HttpResponse.BodyHandlers.ofString());
        assertError(late, 503, null, "a request during shutdown");
        closer.join();
        assertThat(quick.get().statusCode()).as(quick.get().body()).isEqualTo(200);
        String body = stream.get().body();
        assertThat(body).contains("\"finish_reason\":\"abort\"").endsWith("data: [DONE]\n\n");
        assertThat(slow.openSequences()).isZero();
    }

    @Test
    void aClientThatHangsUpIsCancelled() throws Exception {
        // 5 ms a step: the 2000 tokens asked for would take 10 s had the client stayed.
        ToyModel slow = new ToyModel(4096, 0, 5_000_000, 0);
        try (OpenAiServer s = new OpenAiServer(new ServedModel("toy", slow, new ByteText()),
                SchedulerConfig.defaults(), ServerConfig.local(0)).start()) {
            String body = chatWith("max_tokens", 2000).replace("\"temperature\":0",
                    "\"temperature\":0,\"stream\":true");
            HttpRequest request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + s.port() + CHAT))
                    .POST(HttpRequest.BodyPublishers.ofString(body)).build();
            HttpResponse<InputStream> r = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
            assertThat(r.statusCode()).isEqualTo(200);
            long hungUp;
            try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
                assertThat(in.readLine()).startsWith("data: {");
                hungUp = System.nanoTime();
            }
            // The first event may go out while the request still waits for a slot (no sequence open yet), so wait
            // for the abort itself, then check that no sequence is left open.
            assertAbortedAndFreed(s, slow, hungUp);
        }
        assertStillServing();
    }

    /** Within 5 s of {@code hungUp}: one sequence ended by an abort, none left open, far fewer tokens than asked. */
    private static void assertAbortedAndFreed(OpenAiServer s, ToyModel slow, long hungUp) throws InterruptedException {
        String aborted = "moe4j_sequences_finished_total{reason=\"abort\"} 1";
        long deadline = hungUp + 5_000_000_000L;
        while ((slow.openSequences() > 0 || !s.metrics().prometheus().contains(aborted))
                && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(s.metrics().prometheus()).contains(aborted);
        assertThat(slow.openSequences()).as("the sequence is freed after the client left").isZero();
        assertThat(s.metrics().generatedTokens()).isLessThan(1000);
    }

    @Test
    void aClientThatHangsUpOnAPlainRequestIsCancelled() throws Exception {
        // 5 ms a step: the 2000 tokens asked for would take 10 s had the client stayed; a plain (not streamed)
        // request writes nothing before its answer, so the server must notice the closed connection by itself.
        ToyModel slow = new ToyModel(4096, 0, 5_000_000, 0);
        try (OpenAiServer s = new OpenAiServer(new ServedModel("toy", slow, new ByteText()),
                SchedulerConfig.defaults(), ServerConfig.local(0)).start()) {
            byte[] body = chatWith("max_tokens", 2000).getBytes(StandardCharsets.UTF_8);
            long hungUp;
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", s.port())) {
                OutputStream out = socket.getOutputStream();
                out.write(("POST " + CHAT + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                        + "Content-Length: " + body.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                out.write(body);
                out.flush();
                long started = System.nanoTime() + 5_000_000_000L;
                while (s.metrics().generatedTokens() < 20 && System.nanoTime() < started) {
                    Thread.sleep(5);
                }
                assertThat(s.metrics().generatedTokens()).as("generating").isGreaterThanOrEqualTo(20);
                hungUp = System.nanoTime();
            }
            assertAbortedAndFreed(s, slow, hungUp);
        }
        assertStillServing();
    }
}

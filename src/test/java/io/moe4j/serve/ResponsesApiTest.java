package io.moe4j.serve;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import com.openai.core.JsonValue;
import com.openai.core.http.StreamResponse;
import com.openai.errors.BadRequestException;
import com.openai.errors.NotFoundException;
import com.openai.models.chat.completions.ChatCompletion;
import com.openai.models.chat.completions.ChatCompletionCreateParams;
import com.openai.models.responses.Response;
import com.openai.models.responses.ResponseCreateParams;
import com.openai.models.responses.ResponseInputItem;
import com.openai.models.responses.ResponseOutputItem;
import com.openai.models.responses.ResponseOutputMessage;
import com.openai.models.responses.ResponseStatus;
import com.openai.models.responses.ResponseStreamEvent;
import com.openai.models.responses.WebSearchTool;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Responses API ({@code POST /v1/responses}), driven by the official OpenAI Java SDK, which checks every field
 * it reads: a response is the answer the same conversation gets from chat completions, whole and streamed.
 */
@Timeout(60)
class ResponsesApiTest {
    private static final String MODEL = "toy-model";
    private static OpenAiServer server;
    private static OpenAIClient client;

    @BeforeAll
    static void start() {
        ServedModel served = new ServedModel(MODEL, new ToyModel(256, 16, 0, 0), new ByteText());
        server = new OpenAiServer(served, new SchedulerConfig(4, 16, 64), ServerConfig.local(0)).start();
        client = OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused")
                .maxRetries(0).timeout(Duration.ofSeconds(20)).build();
    }

    @AfterAll
    static void stop() {
        client.close();
        server.close();
    }

    private static String text(Response r) {
        StringBuilder text = new StringBuilder();
        for (ResponseOutputItem item : r.output()) {
            item.message().ifPresent(m -> m.content().forEach(c -> text.append(c.asOutputText().text())));
        }
        return text.toString();
    }

    /** What chat completions answer for the same messages, greedily. */
    private static ChatCompletion chat(String system, String user, long maxTokens) {
        ChatCompletionCreateParams.Builder b = ChatCompletionCreateParams.builder().model(MODEL).temperature(0.0)
                .maxCompletionTokens(maxTokens);
        if (system != null) {
            b.addSystemMessage(system);
        }
        return client.chat().completions().create(b.addUserMessage(user).build());
    }

    @Test
    void aResponseIsTheChatAnswer() {
        Response r = client.responses().create(ResponseCreateParams.builder().model(MODEL).input("tell me a story")
                .temperature(0.0).maxOutputTokens(40).build());
        r.validate();
        ChatCompletion c = chat(null, "tell me a story", 40);
        assertThat(text(r)).isEqualTo(c.choices().getFirst().message().content().orElseThrow());
        assertThat(r.id()).startsWith("resp_");
        assertThat(r.model().asString()).isEqualTo(MODEL);
        boolean cut = c.choices().getFirst().finishReason().asString().equals("length");
        assertThat(r.status()).contains(cut ? ResponseStatus.INCOMPLETE : ResponseStatus.COMPLETED);
        assertThat(r.incompleteDetails().isPresent()).isEqualTo(cut);
        var usage = r.usage().orElseThrow();
        assertThat(usage.inputTokens()).isEqualTo(c.usage().orElseThrow().promptTokens());
        assertThat(usage.outputTokens()).isEqualTo(c.usage().orElseThrow().completionTokens());
        assertThat(usage.totalTokens()).isEqualTo(usage.inputTokens() + usage.outputTokens());
        ResponseOutputMessage message = r.output().getFirst().asMessage();
        assertThat(message.id()).startsWith("msg_");
        assertThat(r.temperature()).contains(0.0);
    }

    /** instructions come first, as a system message; input items of text parts are messages. */
    @Test
    void instructionsAndInputItemsAreTheChatsMessages() {
        Response r = client.responses().create(ResponseCreateParams.builder().model(MODEL)
                .instructions("be brief").inputOfResponse(List.of(ResponseInputItem.ofEasyInputMessage(
                        com.openai.models.responses.EasyInputMessage.builder()
                                .role(com.openai.models.responses.EasyInputMessage.Role.USER).content("hi there")
                                .build())))
                .temperature(0.0).maxOutputTokens(30).build());
        r.validate();
        assertThat(r.instructions()).isPresent();
        assertThat(text(r)).isEqualTo(chat("be brief", "hi there", 30).choices().getFirst().message().content()
                .orElseThrow());
    }

    @Test
    void aStreamedResponseIsTheWholeOneInEvents() {
        ResponseCreateParams params = ResponseCreateParams.builder().model(MODEL).input("a streamed story")
                .temperature(0.0).maxOutputTokens(30).build();
        Response whole = client.responses().create(params);
        List<ResponseStreamEvent> events = new ArrayList<>();
        try (StreamResponse<ResponseStreamEvent> s = client.responses().createStreaming(params)) {
            s.stream().forEach(events::add);
        }
        events.forEach(ResponseStreamEvent::validate);
        assertThat(events.getFirst().isCreated()).isTrue();
        assertThat(events.get(1).isInProgress()).isTrue();
        ResponseStreamEvent last = events.getLast();
        Response fin = last.isCompleted() ? last.asCompleted().response() : last.asIncomplete().response();
        assertThat(fin.status()).isEqualTo(whole.status());
        StringBuilder deltas = new StringBuilder();
        long sequence = 0;
        for (ResponseStreamEvent e : events) {
            e.outputTextDelta().ifPresent(d -> deltas.append(d.delta()));
            long n = e.isCreated() ? e.asCreated().sequenceNumber() : e.isInProgress() ? e.asInProgress().sequenceNumber()
                    : e.isOutputTextDelta() ? e.asOutputTextDelta().sequenceNumber()
                    : e.isOutputItemAdded() ? e.asOutputItemAdded().sequenceNumber()
                    : e.isOutputItemDone() ? e.asOutputItemDone().sequenceNumber()
                    : e.isContentPartAdded() ? e.asContentPartAdded().sequenceNumber()
                    : e.isContentPartDone() ? e.asContentPartDone().sequenceNumber()
                    : e.isOutputTextDone() ? e.asOutputTextDone().sequenceNumber()
                    : e.isCompleted() ? e.asCompleted().sequenceNumber() : e.asIncomplete().sequenceNumber();
            assertThat(n).isEqualTo(sequence++);
        }
        assertThat(deltas.toString()).isEqualTo(text(whole));
        assertThat(text(fin)).isEqualTo(text(whole));
        assertThat(events.stream().filter(ResponseStreamEvent::isOutputTextDone).findFirst().orElseThrow()
                .asOutputTextDone().text()).isEqualTo(text(whole));
        assertThat(fin.usage().orElseThrow().outputTokens()).isEqualTo(whole.usage().orElseThrow().outputTokens());
    }

    @Test
    void whatThisServerDoesNotDoIsRefusedByName() {
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL).input("x")
                .previousResponseId("resp_1").build())).isInstanceOf(NotFoundException.class)
                .hasMessageContaining("resp_1");
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL).input("x")
                .addTool(WebSearchTool.builder().type(WebSearchTool.Type.WEB_SEARCH).build()).build()))
                .isInstanceOf(BadRequestException.class).hasMessageContaining("tools[0].type");
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL).input("x")
                .maxOutputTokens(1000).build())).isInstanceOf(BadRequestException.class)
                .hasMessageContaining("max_output_tokens");
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL).input("x")
                .putAdditionalBodyProperty("frobnicate", JsonValue.from(1)).build()))
                .isInstanceOf(BadRequestException.class).hasMessageContaining("frobnicate");
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL)
                .inputOfResponse(List.of()).build())).isInstanceOf(BadRequestException.class)
                .hasMessageContaining("input");
        assertThatThrownBy(() -> client.responses().retrieve("resp_123")).isInstanceOf(NotFoundException.class)
                .hasMessageContaining("resp_123");
    }

    /**
     * A stored response (the default) is read back by its id and continued by previous_response_id: the next turn is
     * the chat of the whole conversation so far, without the earlier request's instructions (they do not carry over).
     * One sent with store false is not kept.
     */
    @Test
    void aStoredResponseIsReadBackAndContinued() {
        Response first = client.responses().create(ResponseCreateParams.builder().model(MODEL)
                .instructions("be terse").input("tell me a story").temperature(0.0).maxOutputTokens(20).build());
        Response again = client.responses().retrieve(first.id());
        assertThat(again.id()).isEqualTo(first.id());
        assertThat(text(again)).isEqualTo(text(first));
        Response next = client.responses().create(ResponseCreateParams.builder().model(MODEL)
                .previousResponseId(first.id()).input("and then?").temperature(0.0).maxOutputTokens(20).build());
        next.validate();
        assertThat(next.previousResponseId()).contains(first.id());
        ChatCompletion chat = client.chat().completions().create(ChatCompletionCreateParams.builder().model(MODEL)
                .temperature(0.0).maxCompletionTokens(20).addUserMessage("tell me a story")
                .addAssistantMessage(text(first)).addUserMessage("and then?").build());
        assertThat(text(next)).isEqualTo(chat.choices().getFirst().message().content().orElseThrow());
        assertThat(next.usage().orElseThrow().inputTokens()).isEqualTo(chat.usage().orElseThrow().promptTokens());
        Response unkept = client.responses().create(ResponseCreateParams.builder().model(MODEL).input("x")
                .store(false).maxOutputTokens(2).build());
        assertThatThrownBy(() -> client.responses().retrieve(unkept.id())).isInstanceOf(NotFoundException.class);
        // deleted: neither read back nor continued, and a second delete finds nothing
        client.responses().delete(first.id());
        assertThatThrownBy(() -> client.responses().retrieve(first.id())).isInstanceOf(NotFoundException.class);
        assertThatThrownBy(() -> client.responses().create(ResponseCreateParams.builder().model(MODEL)
                .previousResponseId(first.id()).input("more").maxOutputTokens(2).build()))
                .isInstanceOf(NotFoundException.class).hasMessageContaining(first.id());
        assertThatThrownBy(() -> client.responses().delete(first.id())).isInstanceOf(NotFoundException.class);
        assertThat(client.responses().retrieve(next.id()).id()).isEqualTo(next.id());
    }

    private static com.fasterxml.jackson.databind.JsonNode post(String body) throws Exception {
        try (java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient()) {
            var r = http.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create("http://127.0.0.1:"
                            + server.port() + "/v1/responses")).header("Content-Type", "application/json")
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString(body)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString());
            var tree = (com.fasterxml.jackson.databind.node.ObjectNode) new com.fasterxml.jackson.databind.ObjectMapper()
                    .readTree(r.body());
            return tree.put("status", r.statusCode());
        }
    }

    /** A refusal names the field as this API spells it, not as the chat request it is read as. */
    @Test
    void refusalsNameTheResponsesFields() throws Exception {
        String[][] cases = {
            // {body, param}
            {"{\"model\":\"toy-model\",\"input\":\"hi\",\"tool_choice\":\"none\",\"tools\":[{\"type\":\"function\","
                    + "\"name\":\"f\",\"parameters\":\"x\"}]}", "tools[0].parameters"},
            {"{\"model\":\"toy-model\",\"input\":[{\"role\":\"user\",\"content\":\"hi\"},{\"type\":"
                    + "\"function_call_output\",\"call_id\":\"nope\",\"output\":\"x\"}]}", "input[1].call_id"},
            {"{\"model\":\"toy-model\",\"input\":\"hi\",\"response_format\":{\"type\":\"json_object\"}}",
                    "response_format"},
            {"{\"model\":\"toy-model\",\"input\":\"hi\",\"max_output_tokens\":0}", "max_output_tokens"},
            {"{\"model\":\"toy-model\",\"input\":\"hi\",\"store\":\"no\"}", "store"},
            {"{\"model\":\"toy-model\",\"input\":\"hi\",\"previous_response_id\":123}", "previous_response_id"},
        };
        for (String[] c : cases) {
            var r = post(c[0]);
            assertThat(r.path("status").asInt()).as(c[0] + " -> " + r).isEqualTo(400);
            assertThat(r.path("error").path("param").asText()).as(c[0] + " -> " + r).isEqualTo(c[1]);
            assertThat(r.path("error").path("message").asText()).as(c[0]).contains(c[1].replaceAll("\\[.*", ""))
                    .doesNotContain("messages").doesNotContain("function.parameters");
        }
    }
}

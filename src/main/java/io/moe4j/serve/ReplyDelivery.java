package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.http.Context;
import io.moe4j.generate.FinishReason;
import io.moe4j.generate.ReplyReader;
import io.moe4j.generate.TokenLogprobs;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Answers one request from its choices' events (one choice per sequence; {@code n} of them): whole, once every
 * choice has ended, or streamed as server-sent events, each chunk naming its choice's index. Runs on the request's
 * HTTP thread.
 */
final class ReplyDelivery {
    private final BlockingQueue<RequestChannel.Event> events;
    private final List<Choice> choices;
    private final ResponseShapes shapes;
    /** Top tokens an echo's prompt lists ({@code logprobs}), and vLLM's {@code prompt_logprobs} (-1: none). */
    private int echoTop = -1;
    private int promptTop = -1;
    /** Writes {@code prompt_logprobs}. */
    private LogprobsWriter promptWriter;
    /** The tokens a text encodes to (chat usage's reasoning tokens); null: not reported. */
    private java.util.function.ToIntFunction<String> countTokens;

    /** One choice: its ticket, what reads its reply, and what it has produced so far. */
    static final class Choice {
        final int index;
        final Ticket ticket;
        /** Splits the reply into answer, reasoning and tool calls; null for plain text. */
        final ReplyReader reader;
        /** Writes its log-probabilities; null when the request did not ask for them. */
        final LogprobsWriter logprobs;
        final StringBuilder text = new StringBuilder();
        /** Log-probabilities not yet written (a whole reply's all of them). */
        final List<TokenLogprobs> tokens = new ArrayList<>();
        GenerationResult end;
        /** The prompt written before the reply (the completions API's echo), or null. */
        String echo;
        /** The echoed prompt's first token (its log-probabilities are listed from it when asked for). */
        int echoFirstToken = -1;
        /** Log-probabilities of the echoed prompt's tokens after the first, as they come. */
        final List<TokenLogprobs> promptScores = new ArrayList<>();
        /** A streamed echo that waits for its prompt's log-probabilities: not yet sent. */
        boolean echoPending;

        /** Whether its prompt's tokens count in the usage (the first choice of each prompt). */
        final boolean countsPrompt;

        Choice(int index, Ticket ticket, ReplyReader reader, LogprobsWriter logprobs, boolean countsPrompt) {
            this.countsPrompt = countsPrompt;
            this.index = index;
            this.ticket = ticket;
            this.reader = reader;
            this.logprobs = logprobs;
        }

        /** The chunk, carrying the log-probabilities not yet sent (of its text's tokens and those held back). */
        ObjectNode attach(ObjectNode chunk) {
            ResponseShapes.indexed(chunk, index);
            if (logprobs != null && !tokens.isEmpty()) {
                ResponseShapes.withLogprobs(chunk, logprobs.write(tokens));
                tokens.clear();
            }
            return chunk;
        }
    }

    ReplyDelivery(BlockingQueue<RequestChannel.Event> events, List<Choice> choices, ResponseShapes shapes) {
        this.events = events;
        this.choices = List.copyOf(choices);
        this.shapes = shapes;
    }

    /**
     * How the scored prompt is written: an echo's log-probabilities list {@code echoTop} top tokens, vLLM's
     * {@code prompt_logprobs} {@code promptTop} (-1: not written); the prompt was scored with the larger.
     */
    void promptScores(int echoTop, int promptTop, LogprobsWriter writer) {
        this.echoTop = echoTop;
        this.promptTop = promptTop;
        this.promptWriter = writer;
    }

    /** Chat usage reports the replies' reasoning tokens, counted by {@code countTokens}. */
    void countReasoning(java.util.function.ToIntFunction<String> countTokens) {
        this.countTokens = countTokens;
    }

    /** The body with its usage's reasoning tokens, where chat's are counted; every choice's reader has finished. */
    private ObjectNode withReasoning(ObjectNode body) {
        if (countTokens == null || !shapes.chat()) {
            return body;
        }
        int tokens = 0;
        for (Choice c : choices) {
            if (c.reader != null && !c.reader.reasoning().isEmpty()) {
                tokens += countTokens.applyAsInt(c.reader.reasoning());
            }
        }
        return ResponseShapes.withReasoningTokens(body, tokens);
    }

    private static List<TokenLogprobs> top(List<TokenLogprobs> scores, int top) {
        return scores.stream().map(t -> t.withTop(top)).toList();
    }

    /**
     * The completions API's echo: the choice's reply starts with its prompt's text (and, with log-probabilities, its
     * tokens' ones, from {@code firstToken} on).
     */
    void echo(int choice, String prompt, int firstToken) {
        Choice c = choices.get(choice);
        c.echo = prompt;
        c.echoFirstToken = firstToken;
        c.echoPending = c.logprobs != null;
        c.text.append(prompt);
    }

    /** The choice's log-probabilities: the echoed prompt's first when it has them, then the reply's. */
    private JsonNode written(Choice c) {
        if (c.logprobs == null) {
            return null;
        }
        return c.echo != null ? c.logprobs.writeEcho(c.echoFirstToken, top(c.promptScores, echoTop), c.tokens)
                : c.logprobs.write(c.tokens);
    }

    void cancelAll() {
        choices.forEach(c -> c.ticket.cancel());
    }

    /** The whole response, once every choice has ended; a client that hangs up first cancels them. */
    void whole(Context ctx, HangUpProbe probe) throws InterruptedException {
        int ended = 0;
        while (ended < choices.size()) {
            if (probe.clientGone()) {
                // nobody to answer: free the sequences at the next step boundary
                cancelAll();
                return;
            }
            RequestChannel.Event event = events.poll(HangUpProbe.INTERVAL_NANOS / 1_000_000, TimeUnit.MILLISECONDS);
            if (event == null) {
                continue;
            }
            Choice c = choices.get(event.choice());
            if (event.prompt() != null) {
                c.promptScores.addAll(event.prompt());
                continue;
            }
            if (event.end() == null) {
                if (event.logprobs() != null) {
                    c.tokens.add(event.logprobs());
                }
                c.text.append(event.text());
                if (c.reader != null && !event.text().isEmpty()) {
                    c.reader.feed(event.text(), event.specialEnds());
                }
                continue;
            }
            if (event.end().reason() == FinishReason.ERROR || event.end().reason() == FinishReason.CANCELLED) {
                cancelAll();
                failIfAborted(event.end());
            }
            c.end = event.end();
            ended++;
        }
        List<ObjectNode> bodies = new ArrayList<>();
        for (Choice c : choices) {
            JsonNode written = written(c);
            ObjectNode body;
            if (c.reader == null) {
                body = shapes.whole(c.text.toString(), c.end, written);
            } else {
                c.reader.finish();
                body = shapes.wholeReply(c.reader.answer(), c.reader.reasoning(), c.reader.toolCalls(), c.end,
                        written);
            }
            if (promptTop >= 0 && !shapes.chat()) {
                // vLLM writes a completion's prompt_logprobs in its choice
                ((ObjectNode) body.get("choices").get(0)).set("prompt_logprobs",
                        promptWriter.promptLogprobs(top(c.promptScores, promptTop)));
            }
            bodies.add(body);
        }
        if (probe.tookData()) {
            ctx.header("Connection", "close");
        }
        ObjectNode response = withReasoning(shapes.joined(bodies, total()));
        if (promptTop >= 0 && shapes.chat()) {
            // and a chat's at the top (one prompt)
            response.set("prompt_logprobs", promptWriter.promptLogprobs(top(choices.getFirst().promptScores,
                    promptTop)));
        }
        ctx.contentType("application/json").result(response.toString());
    }

    /** The usage of all choices together: each prompt once, every choice's completion. */
    private GenerationResult total() {
        int prompt = 0;
        int cached = 0;
        int completion = 0;
        for (Choice c : choices) {
            completion += c.end.completionTokens();
            if (c.countsPrompt) {
                prompt += c.end.promptTokens();
                cached += c.end.cachedTokens();
            }
        }
        return new GenerationResult(choices.getFirst().end.reason(), prompt, completion, null, cached);
    }

    /** Streams every choice's reply as it comes; a write that fails (the client left) cancels them. */
    void stream(Context ctx, boolean includeUsage, long keepAliveMillis) throws InterruptedException {
        ctx.status(200);
        ctx.res().setContentType("text/event-stream");
        ctx.res().setCharacterEncoding("utf-8");
        ctx.res().setHeader("Cache-Control", "no-cache");
        ctx.res().setHeader("X-Accel-Buffering", "no");
        try {
            OutputStream out = ctx.res().getOutputStream();
            for (Choice c : choices) {
                if (shapes.chat()) {
                    send(out, ResponseShapes.indexed(shapes.firstChunk(includeUsage), c.index));
                } else if (c.echo != null && !c.echo.isEmpty() && !c.echoPending) {
                    send(out, ResponseShapes.indexed(shapes.textChunk(c.echo, includeUsage), c.index));
                }
            }
            int ended = 0;
            while (ended < choices.size()) {
                RequestChannel.Event event = events.poll(Math.max(1, keepAliveMillis), TimeUnit.MILLISECONDS);
                if (event == null) {
                    // An SSE comment: clients skip it, and a write to a client that left fails here.
                    out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    continue;
                }
                // Text already waiting goes out together: a run of one choice's text events in one chunk.
                List<RequestChannel.Event> batch = new ArrayList<>();
                batch.add(event);
                events.drainTo(batch);
                for (int i = 0; i < batch.size(); ) {
                    RequestChannel.Event e = batch.get(i);
                    Choice c = choices.get(e.choice());
                    if (e.prompt() != null) {
                        c.promptScores.addAll(e.prompt());
                        i++;
                        continue;
                    }
                    if (c.echoPending && (e.end() == null || e.end().reason() != FinishReason.ERROR)) {
                        // every prompt score comes before the reply's first token and its end
                        c.echoPending = false;
                        send(out, ResponseShapes.withLogprobs(ResponseShapes.indexed(
                                shapes.textChunk(c.echo, includeUsage), c.index),
                                c.logprobs.writeEcho(c.echoFirstToken, top(c.promptScores, echoTop), List.of())));
                    }
                    if (e.end() != null) {
                        if (!finish(out, c, e.end(), includeUsage)) {
                            cancelAll();
                            out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
                            out.close();
                            return;
                        }
                        ended++;
                        i++;
                        continue;
                    }
                    StringBuilder text = new StringBuilder();
                    // a reader takes each event's text with its special tokens' ends; the events it makes go together
                    List<ReplyReader.Event> read = new ArrayList<>();
                    while (i < batch.size() && batch.get(i).end() == null && batch.get(i).prompt() == null
                            && batch.get(i).choice() == c.index) {
                        RequestChannel.Event piece = batch.get(i);
                        text.append(piece.text());
                        if (c.reader != null && !piece.text().isEmpty()) {
                            read.addAll(c.reader.feed(piece.text(), piece.specialEnds()));
                        }
                        if (piece.logprobs() != null) {
                            c.tokens.add(piece.logprobs());
                        }
                        i++;
                    }
                    if (text.isEmpty()) {
                        continue;   // the tokens' log-probabilities wait for the chunk that carries their text
                    }
                    if (c.reader == null) {
                        send(out, c.attach(shapes.textChunk(text.toString(), includeUsage)));
                    } else {
                        sendEvents(out, c, read, includeUsage);
                    }
                }
            }
            if (includeUsage) {
                send(out, withReasoning(shapes.usageChunk(total())));
            }
            out.write("data: [DONE]\n\n".getBytes(StandardCharsets.UTF_8));
            // Closing ends the chunked body now (its last chunk written), not after the handler returns, so a
            // server that stops right after this handler does not cut the stream short.
            out.close();
        } catch (IOException e) {
            // The client went away: free the sequences at the next step boundary.
            cancelAll();
        }
    }

    /** A choice's end: what its reader still holds and its finish chunk; false (an error event sent) on a failure. */
    private boolean finish(OutputStream out, Choice c, GenerationResult end, boolean includeUsage)
            throws IOException {
        c.end = end;
        if (end.reason() == FinishReason.ERROR) {
            send(out, shapes.errorEvent(new ApiError(500, end.error(), "server_error", null, null)));
            return false;
        }
        if (c.reader != null) {
            sendEvents(out, c, c.reader.finish(), includeUsage);
        }
        boolean calls = c.reader != null && !c.reader.toolCalls().isEmpty();
        send(out, c.attach(shapes.finishChunk(end, includeUsage, calls)));
        return true;
    }

    /** Sends the reader's events as chunks: text runs of one kind together, each tool call in two chunks. */
    private void sendEvents(OutputStream out, Choice c, List<ReplyReader.Event> readerEvents, boolean includeUsage)
            throws IOException {
        StringBuilder run = new StringBuilder();
        boolean runIsReasoning = false;
        for (ReplyReader.Event e : readerEvents) {
            switch (e) {
                case ReplyReader.Event.Answer(String t) -> {
                    if (runIsReasoning && !run.isEmpty()) {
                        send(out, c.attach(shapes.reasoningChunk(run.toString(), includeUsage)));
                        run.setLength(0);
                    }
                    runIsReasoning = false;
                    run.append(t);
                }
                case ReplyReader.Event.Reasoning(String t) -> {
                    if (!runIsReasoning && !run.isEmpty()) {
                        send(out, c.attach(shapes.textChunk(run.toString(), includeUsage)));
                        run.setLength(0);
                    }
                    runIsReasoning = true;
                    run.append(t);
                }
                case ReplyReader.Event.Call(int index, io.moe4j.text.tools.ToolCall call) -> {
                    if (!run.isEmpty()) {
                        send(out, c.attach(runIsReasoning ? shapes.reasoningChunk(run.toString(), includeUsage)
                                : shapes.textChunk(run.toString(), includeUsage)));
                        run.setLength(0);
                    }
                    for (ObjectNode chunk : shapes.toolCallChunks(index, call, includeUsage)) {
                        send(out, c.attach(chunk));
                    }
                }
            }
        }
        if (!run.isEmpty()) {
            send(out, c.attach(runIsReasoning ? shapes.reasoningChunk(run.toString(), includeUsage)
                    : shapes.textChunk(run.toString(), includeUsage)));
        }
    }

    private static void send(OutputStream out, JsonNode event) throws IOException {
        out.write(("data: " + event + "\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    /** Throws the API error of a reply that ended by failing or by being cancelled. */
    static void failIfAborted(GenerationResult end) {
        if (end.reason() == FinishReason.ERROR) {
            throw new ApiError(500, end.error(), "server_error", null, null);
        }
        if (end.reason() == FinishReason.CANCELLED) {
            throw new ApiError(503, "the request was cancelled: the server is shutting down", "server_error", null,
                    "shutting_down");
        }
    }
}

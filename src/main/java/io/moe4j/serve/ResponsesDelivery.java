package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.javalin.http.Context;
import io.moe4j.generate.FinishReason;
import io.moe4j.generate.ReplyReader;
import io.moe4j.text.tools.ToolCall;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Answers a Responses API request from its one sequence's events: whole (a {@code response} object whose output is
 * the reasoning item, the message and the function calls) or streamed as OpenAI streams one: {@code response.created}
 * and {@code response.in_progress}, each output item opened, its content's deltas, the item closed, then
 * {@code response.completed} (or {@code response.incomplete} when the reply reached its length). Runs on the
 * request's HTTP thread.
 */
final class ResponsesDelivery {
    private final BlockingQueue<RequestChannel.Event> events;
    private final ReplyDelivery.Choice choice;
    private final ResponsesShapes shapes;
    private final String itemPrefix;
    private int items;
    // the stream's state
    private OutputStream out;
    private int sequence;
    private ArrayNode finished;
    /** The output item whose content is being streamed (a message or a reasoning item), or null. */
    private OpenItem open;
    /** The finished response (completed or incomplete) once answered; null until then, or when it failed. */
    private ObjectNode answered;

    private record OpenItem(boolean message, String id, int index, StringBuilder text) {
    }

    ResponsesDelivery(BlockingQueue<RequestChannel.Event> events, ReplyDelivery.Choice choice, ResponsesShapes shapes,
                      String itemPrefix) {
        this.events = events;
        this.choice = choice;
        this.shapes = shapes;
        this.itemPrefix = itemPrefix;
    }

    /** The finished response once answered (completed or incomplete), else null. */
    ObjectNode answered() {
        return answered;
    }

    private String itemId(String kind) {
        return kind + "_" + itemPrefix + "_" + items++;
    }

    /** The whole response once the reply has ended; a client that hangs up first cancels it. */
    void whole(Context ctx, HangUpProbe probe) throws InterruptedException {
        GenerationResult end = null;
        while (end == null) {
            if (probe.clientGone()) {
                choice.ticket.cancel();
                return;
            }
            RequestChannel.Event event = events.poll(HangUpProbe.INTERVAL_NANOS / 1_000_000, TimeUnit.MILLISECONDS);
            if (event == null || event.prompt() != null) {
                continue;
            }
            if (event.end() != null) {
                ReplyDelivery.failIfAborted(event.end());
                end = event.end();
            } else {
                choice.text.append(event.text());
                if (choice.reader != null && !event.text().isEmpty()) {
                    choice.reader.feed(event.text(), event.specialEnds());
                }
            }
        }
        String answer;
        String reasoning = "";
        List<ToolCall> calls = List.of();
        if (choice.reader != null) {
            choice.reader.finish();
            answer = choice.reader.answer();
            reasoning = choice.reader.reasoning();
            calls = choice.reader.toolCalls();
        } else {
            answer = choice.text.toString();
        }
        String status = ResponsesShapes.status(end);
        ArrayNode output = shapes.json().createArrayNode();
        if (!reasoning.isEmpty()) {
            output.add(shapes.reasoningItem(itemId("rs"), reasoning, "completed"));
        }
        if (!answer.isEmpty() || calls.isEmpty()) {
            output.add(shapes.messageItem(itemId("msg"), answer, status));
        }
        for (ToolCall call : calls) {
            output.add(shapes.functionCallItem(itemId("fc"), call, call.arguments(), "completed"));
        }
        if (probe.tookData()) {
            ctx.header("Connection", "close");
        }
        answered = shapes.response(status, output, end, null);
        ctx.contentType("application/json").result(answered.toString());
    }

    /** Streams the response's events as they come; a write that fails (the client left) cancels the reply. */
    void stream(Context ctx, long keepAliveMillis) throws InterruptedException {
        ctx.status(200);
        ctx.res().setContentType("text/event-stream");
        ctx.res().setCharacterEncoding("utf-8");
        ctx.res().setHeader("Cache-Control", "no-cache");
        ctx.res().setHeader("X-Accel-Buffering", "no");
        finished = shapes.json().createArrayNode();
        try {
            out = ctx.res().getOutputStream();
            ObjectNode created = shapes.event("response.created", sequence++);
            created.set("response", shapes.response("in_progress", shapes.json().createArrayNode(), null, null));
            send(created);
            ObjectNode progress = shapes.event("response.in_progress", sequence++);
            progress.set("response", shapes.response("in_progress", shapes.json().createArrayNode(), null, null));
            send(progress);
            while (true) {
                RequestChannel.Event event = events.poll(Math.max(1, keepAliveMillis), TimeUnit.MILLISECONDS);
                if (event == null) {
                    out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    continue;
                }
                if (event.prompt() != null) {
                    continue;
                }
                if (event.end() == null) {
                    if (!event.text().isEmpty()) {
                        if (choice.reader == null) {
                            answer(event.text());
                        } else {
                            take(choice.reader.feed(event.text(), event.specialEnds()));
                        }
                    }
                    continue;
                }
                end(event.end());
                out.close();
                return;
            }
        } catch (IOException e) {
            choice.ticket.cancel();
        }
    }

    private void end(GenerationResult end) throws IOException {
        if (end.reason() == FinishReason.ERROR || end.reason() == FinishReason.CANCELLED) {
            closeOpen("incomplete");
            String why = end.reason() == FinishReason.ERROR ? end.error()
                    : "the request was cancelled: the server is shutting down";
            ObjectNode failed = shapes.event("response.failed", sequence++);
            failed.set("response", shapes.response("failed", finished, end, why));
            send(failed);
            return;
        }
        if (choice.reader != null) {
            take(choice.reader.finish());
        }
        String status = ResponsesShapes.status(end);
        boolean anyMessage = false;
        for (JsonNode item : finished) {
            anyMessage |= !item.path("type").asText().equals("reasoning");
        }
        if (open == null && !anyMessage) {
            // no answer and no call: an empty message, as a whole response has one
            openItem(true);
        }
        closeOpen(status);
        ObjectNode last = shapes.event(status.equals("completed") ? "response.completed" : "response.incomplete",
                sequence++);
        answered = shapes.response(status, finished, end, null);
        last.set("response", answered);
        send(last);
    }

    private void take(List<ReplyReader.Event> readerEvents) throws IOException {
        for (ReplyReader.Event e : readerEvents) {
            switch (e) {
                case ReplyReader.Event.Answer(String t) -> answer(t);
                case ReplyReader.Event.Reasoning(String t) -> reasoning(t);
                case ReplyReader.Event.Call(int index, ToolCall call) -> call(call);
            }
        }
    }

    private void answer(String text) throws IOException {
        delta(true, text);
    }

    private void reasoning(String text) throws IOException {
        delta(false, text);
    }

    /** Text of a message ({@code message}) or a reasoning item, in the open item of that kind (opened if need be). */
    private void delta(boolean message, String text) throws IOException {
        if (text.isEmpty()) {
            return;
        }
        if (open != null && open.message() != message) {
            closeOpen("completed");
        }
        if (open == null) {
            openItem(message);
        }
        open.text().append(text);
        ObjectNode delta = contentEvent(message ? "response.output_text.delta" : "response.reasoning_text.delta");
        delta.put("delta", text);
        if (message) {
            delta.putArray("logprobs");
        }
        send(delta);
    }

    private ObjectNode contentEvent(String type) {
        ObjectNode e = shapes.event(type, sequence++);
        e.put("item_id", open.id()).put("output_index", open.index()).put("content_index", 0);
        return e;
    }

    private void openItem(boolean message) throws IOException {
        String id = itemId(message ? "msg" : "rs");
        open = new OpenItem(message, id, finished.size(), new StringBuilder());
        ObjectNode added = shapes.event("response.output_item.added", sequence++);
        added.put("output_index", open.index());
        added.set("item", message ? shapes.messageItem(id, null, "in_progress")
                : shapes.reasoningItem(id, null, "in_progress"));
        send(added);
        ObjectNode part = contentEvent("response.content_part.added");
        part.set("part", message ? shapes.outputText("") : shapes.reasoningText(""));
        send(part);
    }

    /** Closes the open item: its text done, its part done, the item done with {@code status}. */
    private void closeOpen(String status) throws IOException {
        if (open == null) {
            return;
        }
        String text = open.text().toString();
        ObjectNode done = contentEvent(open.message() ? "response.output_text.done" : "response.reasoning_text.done");
        done.put("text", text);
        if (open.message()) {
            done.putArray("logprobs");
        }
        send(done);
        ObjectNode part = contentEvent("response.content_part.done");
        part.set("part", open.message() ? shapes.outputText(text) : shapes.reasoningText(text));
        send(part);
        ObjectNode item = open.message() ? shapes.messageItem(open.id(), text, status)
                : shapes.reasoningItem(open.id(), text, "completed");
        ObjectNode itemDone = shapes.event("response.output_item.done", sequence++);
        itemDone.put("output_index", open.index());
        itemDone.set("item", item);
        send(itemDone);
        finished.add(item);
        open = null;
    }

    /** A function call: its item opened, its arguments in one delta, then done. */
    private void call(ToolCall call) throws IOException {
        closeOpen("completed");
        String id = itemId("fc");
        int index = finished.size();
        ObjectNode added = shapes.event("response.output_item.added", sequence++);
        added.put("output_index", index);
        added.set("item", shapes.functionCallItem(id, call, "", "in_progress"));
        send(added);
        ObjectNode delta = shapes.event("response.function_call_arguments.delta", sequence++);
        delta.put("item_id", id).put("output_index", index).put("delta", call.arguments());
        send(delta);
        ObjectNode args = shapes.event("response.function_call_arguments.done", sequence++);
        args.put("item_id", id).put("output_index", index).put("name", call.name())
                .put("arguments", call.arguments());
        send(args);
        ObjectNode item = shapes.functionCallItem(id, call, call.arguments(), "completed");
        ObjectNode done = shapes.event("response.output_item.done", sequence++);
        done.put("output_index", index);
        done.set("item", item);
        send(done);
        finished.add(item);
    }

    private void send(ObjectNode event) throws IOException {
        out.write(("event: " + event.get("type").asText() + "\ndata: " + event + "\n\n")
                .getBytes(StandardCharsets.UTF_8));
        out.flush();
    }
}

package io.moe4j.serve;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/** Hands one sequence's output from the engine thread to the HTTP thread that answers its request. */
final class RequestChannel implements GenerationListener {
    /**
     * An event: text to show (perhaps with the log-probabilities of the token that made it, when the request asked
     * for them; then the text may be empty), or the end (then {@code text} is null).
     */
    record Event(String text, GenerationResult end, io.moe4j.generate.TokenLogprobs logprobs) {
        Event(String text, GenerationResult end) {
            this(text, end, null);
        }
    }

    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();

    @Override
    public void onText(String text) {
        events.add(new Event(text, null));
    }

    @Override
    public void onToken(String text, io.moe4j.generate.TokenLogprobs logprobs) {
        events.add(new Event(text, null, logprobs));
    }

    @Override
    public void onFinish(GenerationResult result) {
        events.add(new Event(null, result));
    }

    /** The next event, or null after the timeout. */
    Event next(long timeoutMillis) throws InterruptedException {
        return events.poll(timeoutMillis, TimeUnit.MILLISECONDS);
    }

    /** Every event already waiting, so a burst of text goes out as one chunk. */
    Event poll() {
        return events.poll();
    }
}

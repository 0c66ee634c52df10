package io.moe4j.serve;

import io.moe4j.generate.TokenLogprobs;

import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;

/**
 * Hands one sequence's output from the engine thread to the HTTP thread that answers its request: the events of a
 * request's choices share one queue, each tagged with its choice's index.
 */
final class RequestChannel implements GenerationListener {
    /**
     * An event of choice {@code choice}: text to show (perhaps with the log-probabilities of the token that made it,
     * when the request asked for them; then the text may be empty), prompt tokens' log-probabilities (then
     * {@code prompt} is not null and {@code text} is empty), or the end (then {@code text} is null).
     * {@code specialEnds}: the offsets in {@code text} where a special token's text ends (null: none).
     */
    record Event(int choice, String text, GenerationResult end, TokenLogprobs logprobs, List<TokenLogprobs> prompt,
                 int[] specialEnds) {
        Event(int choice, String text, GenerationResult end, TokenLogprobs logprobs) {
            this(choice, text, end, logprobs, null, null);
        }
    }

    private final int choice;
    private final BlockingQueue<Event> events;

    RequestChannel(int choice, BlockingQueue<Event> events) {
        this.choice = choice;
        this.events = events;
    }

    /** A queue for the channels of one request. */
    static BlockingQueue<Event> queue() {
        return new LinkedBlockingQueue<>();
    }

    @Override
    public void onText(String text) {
        onText(text, null);
    }

    @Override
    public void onText(String text, int[] specialEnds) {
        events.add(new Event(choice, text, null, null, null, specialEnds));
    }

    @Override
    public void onToken(String text, TokenLogprobs logprobs) {
        onToken(text, null, logprobs);
    }

    @Override
    public void onToken(String text, int[] specialEnds, TokenLogprobs logprobs) {
        events.add(new Event(choice, text, null, logprobs, null, specialEnds));
    }

    @Override
    public void onPromptLogprobs(List<TokenLogprobs> scored) {
        events.add(new Event(choice, "", null, null, List.copyOf(scored), null));
    }

    @Override
    public void onFinish(GenerationResult result) {
        events.add(new Event(choice, null, result, null));
    }
}

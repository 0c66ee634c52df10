package io.moe4j.serve;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/** A listener that gathers a sequence's text and completes when it ends. */
final class Collector implements GenerationListener {
    record Outcome(String text, GenerationResult result) {
    }

    private final StringBuilder text = new StringBuilder();
    private final CompletableFuture<Outcome> done = new CompletableFuture<>();
    volatile int pieces;

    @Override
    public synchronized void onText(String piece) {
        if (piece.isEmpty()) {
            throw new AssertionError("a listener got an empty piece of text");
        }
        text.append(piece);
        pieces++;
    }

    @Override
    public synchronized void onFinish(GenerationResult result) {
        if (!done.complete(new Outcome(text.toString(), result))) {
            throw new AssertionError("a listener heard the end twice");
        }
    }

    Outcome await() throws Exception {
        return done.get(20, TimeUnit.SECONDS);
    }

    boolean isDone() {
        return done.isDone();
    }
}

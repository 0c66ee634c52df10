package io.moe4j.serve;

import io.moe4j.generate.ReplyBudget;
import io.moe4j.generate.ReplyStream;

import java.util.Arrays;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One request inside the scheduler: its reply (sampler, constraint, detokenizer and stop matcher), how far its prompt
 * has been fed, and what it generated. Everything but the two flags is touched only by the engine thread.
 */
final class Job implements Ticket {
    final GenerationRequest request;
    final ReplyBudget budget;
    final GenerationListener listener;
    final long submittedNanos;
    private final Scheduler owner;
    private final AtomicBoolean finished = new AtomicBoolean();
    volatile boolean cancelled;

    ReplyStream reply;
    StepModel.Sequence sequence;
    int fed;
    int generated;
    int lastToken = -1;
    /** Prompt tokens a kept sequence already held when the job took it. */
    int cachedTokens;
    /** The tokens generated so far, in order (what a kept sequence holds after the prompt). */
    private int[] made = new int[16];
    String samplingError;

    /** @param contextLength the most tokens a sequence may hold, prompt and reply (the last one drawn included) */
    Job(Scheduler owner, GenerationRequest request, GenerationListener listener, int contextLength) {
        this.owner = owner;
        this.request = request;
        this.budget = new ReplyBudget(request.maxTokens(), contextLength);
        this.listener = listener;
        this.submittedNanos = System.nanoTime();
    }

    @Override
    public void cancel() {
        cancelled = true;
        owner.cancelWaiting(this);
    }

    /** The reply's room for the next token: its budget and the context, as the generator counts them too. */
    int room() {
        return budget.room(generated, held());
    }

    /** Whether the reply has reached its length (budget spent or context full) with the tokens taken so far. */
    boolean lengthReached() {
        return budget.spent(generated, held());
    }

    /** The sequence's tokens: the prompt and every token generated (the last one drawn included, though unfed). */
    private long held() {
        return request.prompt().length + (long) generated;
    }

    /** Whether its prompt is scored: fed apart from the batch, every position's logits read. */
    boolean scoresPrompt() {
        return request.promptLogprobs() >= 0;
    }

    boolean prefilling() {
        return fed < request.prompt().length;
    }

    /** The tokens this job feeds in the next step: a prompt chunk, or the token sampled last step. */
    int[] nextInput(int prefillChunk) {
        assert prefillChunk > 0;
        int[] prompt = request.prompt();
        if (fed < prompt.length) {
            return Arrays.copyOfRange(prompt, fed, Math.min(prompt.length, fed + prefillChunk));
        }
        return new int[] {lastToken};
    }

    /** A token the reply took. */
    void took(int token) {
        if (generated == made.length) {
            made = Arrays.copyOf(made, 2 * made.length);
        }
        made[generated] = token;
    }

    /** The first {@code length} tokens of the sequence: the prompt, then the tokens generated. */
    int[] heldTokens(int length) {
        int[] prompt = request.prompt();
        int[] out = Arrays.copyOf(prompt, length);
        if (length > prompt.length) {
            System.arraycopy(made, 0, out, prompt.length, length - prompt.length);
        }
        return out;
    }

    /** Marks the job finished; true only for the first caller, so a listener hears the end exactly once. */
    boolean markFinished() {
        return finished.compareAndSet(false, true);
    }
}

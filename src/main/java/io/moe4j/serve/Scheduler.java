package io.moe4j.serve;

import io.moe4j.generate.FinishReason;
import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.ReplyStream;
import io.moe4j.generate.Sampler;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Continuous batching on one engine thread. Each step feeds the active sequences in one {@link StepModel#step} call:
 * every decoding sequence feeds the token it sampled last step, and sequences still reading their prompt share a
 * budget of {@link SchedulerConfig#prefillTokens()} prompt tokens, first come first served (one that gets none this
 * step sits it out). Prefill and decode thus share a step: requests that join do not pause the others, they only make
 * steps longer by at most the budget. Between steps, finished and cancelled
 * sequences leave and waiting requests join, up to {@link SchedulerConfig#maxSequences()}; behind them waits a queue
 * of at most {@link SchedulerConfig#maxQueue()} requests, and a request that finds it full is refused.
 *
 * <p>Every sequence samples with its own seeded {@link Sampler} and sees only its own logits row, so its tokens do not
 * depend on what else is in the batch (as far as the model's batched forward is exact).
 */
public final class Scheduler implements AutoCloseable {
    private final StepModel model;
    private final TextCodec text;
    private final SchedulerConfig config;
    private final ServeMetrics metrics;
    private final BlockingQueue<Job> waiting;
    /** Finished sequences kept for requests that start the same way; the engine thread's alone. */
    private final PrefixCache prefixCache;
    /**
     * The most positions a kept sequence prepares to go back (rows a sliding layer keeps beyond its window): a rewind
     * past its reply, or a copy of its start for another request (at most as many rows again as the full layers hold).
     */
    private static final int REWIND_MOST = 8192;
    private final List<Job> active = new ArrayList<>();
    /**
     * Jobs held back while an active job with the same prompt reads it (a request's other choices, or the same prompt
     * sent twice at once): when it has, they copy its sequence instead of reading the prompt again. The engine
     * thread's alone; examined before the queue.
     */
    private final java.util.ArrayDeque<Job> deferred = new java.util.ArrayDeque<>();
    private volatile int deferredCount;
    private final boolean[] eos;
    private final Thread engine;
    private final Object admission = new Object();
    /** Logits to sample in one step (sequences x vocabulary) from which sampling goes parallel. */
    private static final long PARALLEL_SAMPLING_WORK = 1 << 17;
    private volatile boolean accepting = true;
    private volatile boolean abortAll;
    private volatile int activeCount;

    public Scheduler(StepModel model, TextCodec text, SchedulerConfig config, ServeMetrics metrics) {
        this.model = model;
        this.text = text;
        this.config = config;
        this.metrics = metrics;
        // A zero-length queue still lets a request wait for the engine to pick it up between two steps.
        this.waiting = new ArrayBlockingQueue<>(Math.max(1, config.maxQueue()));
        this.prefixCache = new PrefixCache(config.prefixCache());
        this.eos = new boolean[model.vocabSize()];
        for (int id : text.eosIds()) {
            if (id < 0 || id >= eos.length) {
                throw new IllegalArgumentException("eos id " + id + " is outside the vocabulary of " + eos.length);
            }
            eos[id] = true;
        }
        metrics.gauges(this::queueLength, () -> activeCount);
        this.engine = Thread.ofPlatform().name("moe-engine").daemon(true).unstarted(this::run);
        engine.start();
    }

    public StepModel model() {
        return model;
    }

    /**
     * Queues a request; the listener hears its text and its end on the engine thread.
     *
     * @throws AdmissionException when the queue is full or the scheduler is shutting down
     * @throws IllegalArgumentException when the prompt leaves no room to generate in the context (or too little for
     *                                  the shortest reply its constraint allows), or holds an id outside the
     *                                  vocabulary
     */
    public Ticket submit(GenerationRequest request, GenerationListener listener) {
        return submitAll(List.of(request), List.of(listener)).getFirst();
    }

    /**
     * Queues several requests together (a request's choices): all of them, or none when the queue has not room for
     * them all ({@link #submit} for each one's checks).
     */
    public List<Ticket> submitAll(List<GenerationRequest> requests, List<GenerationListener> listeners) {
        if (requests.size() != listeners.size() || requests.isEmpty()) {
            throw new IllegalArgumentException(requests.size() + " requests, " + listeners.size() + " listeners");
        }
        List<Job> jobs = new ArrayList<>();
        for (int i = 0; i < requests.size(); i++) {
            jobs.add(checked(requests.get(i), listeners.get(i)));
        }
        // Under the lock that shutdown and the engine's exit take, jobs are either queued before the engine can
        // stop (and are then run or cancelled) or refused: never left waiting for an engine that is gone.
        synchronized (admission) {
            if (!accepting) {
                throw new AdmissionException("the server is shutting down", false);
            }
            // sequences held back to copy a twin wait too: they count against the queue
            if (waiting.remainingCapacity() - deferredCount < jobs.size()) {
                throw new AdmissionException("the queue is full (" + queueLength() + " waiting of at most "
                        + config.maxQueue() + ", " + activeCount + " of " + config.maxSequences()
                        + " sequences running" + (jobs.size() > 1 ? "; this request asks for " + jobs.size() : "")
                        + "); retry later", true);
            }
            waiting.addAll(jobs);
        }
        return List.copyOf(jobs);
    }

    /** The job of a request whose prompt and constraint fit the model, else an IllegalArgumentException. */
    private Job checked(GenerationRequest request, GenerationListener listener) {
        int context = model.contextLength();
        int[] prompt = request.prompt();
        // a request for no reply (a prompt scored or echoed) may fill the context
        if (prompt.length > context || (prompt.length == context && request.maxTokens() > 0)) {
            throw new IllegalArgumentException("the prompt has " + prompt.length + " tokens; the context holds "
                    + context + ", so at most " + (context - 1) + " leave room for an answer");
        }
        for (int id : prompt) {
            if (id < 0 || id >= model.vocabSize()) {
                throw new IllegalArgumentException("token id " + id + " is outside the vocabulary [0, "
                        + model.vocabSize() + ")");
            }
        }
        Job job = new Job(this, request, listener, context);
        if (request.constraint() != null && request.constraint().minTokens() > job.room()) {
            throw new IllegalArgumentException("the constrained reply needs at least " + request.constraint().minTokens()
                    + " tokens; max tokens is " + request.maxTokens() + " and the context leaves "
                    + job.budget.contextRoom(prompt.length) + " after the prompt");
        }
        return job;
    }

    /** Requests waiting: queued, or held back to copy a sequence reading the same prompt. */
    public int queueLength() {
        return waiting.size() + deferredCount;
    }

    public int activeSequences() {
        return activeCount;
    }

    /** Called by a cancelled ticket: a job still waiting leaves the queue now. */
    void cancelWaiting(Job job) {
        if (waiting.remove(job)) {
            finish(job, FinishReason.CANCELLED, null);
        }
    }

    /**
     * Stops taking requests, lets running and waiting ones finish for up to {@code grace}, then cancels what is left
     * and stops the engine thread.
     */
    public void shutdown(Duration grace) {
        synchronized (admission) {
            accepting = false;
        }
        try {
            engine.join(Math.max(1, grace.toMillis()));
            if (engine.isAlive()) {
                abortAll = true;
                engine.join();
            }
        } catch (InterruptedException e) {
            abortAll = true;
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void close() {
        shutdown(Duration.ZERO);
    }

    private void run() {
        try {
            while (!abortAll && (accepting || !active.isEmpty() || !waiting.isEmpty() || !deferred.isEmpty())) {
                long start = System.nanoTime();
                dropCancelled();
                long idle = admit();
                if (active.isEmpty()) {
                    continue;
                }
                long model = step();
                metrics.hostWork((System.nanoTime() - start - idle - model) / 1e9);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            for (Job job : active) {
                finish(job, FinishReason.CANCELLED, null);
            }
            active.clear();
            for (Job job : deferred) {
                finish(job, FinishReason.CANCELLED, null);
            }
            deferred.clear();
            deferredCount = 0;
            activeCount = 0;
            List<Job> left = new ArrayList<>();
            synchronized (admission) {
                // Whatever ended the loop, later submissions are refused rather than left waiting for a dead engine.
                accepting = false;
                waiting.drainTo(left);
            }
            for (Job job : left) {
                finish(job, FinishReason.CANCELLED, null);
            }
            prefixCache.close();
        }
    }

    private void dropCancelled() {
        for (int i = active.size() - 1; i >= 0; i--) {
            Job job = active.get(i);
            if (job.cancelled) {
                active.remove(i);
                finish(job, FinishReason.CANCELLED, null);
            }
        }
        activeCount = active.size();
    }

    /**
     * Moves waiting requests into free slots; with nothing running, waits a little for one to arrive. Returns the
     * nanoseconds it spent waiting so.
     */
    private long admit() throws InterruptedException {
        long idle = 0;
        int held = deferred.size();
        while (active.size() < config.maxSequences()) {
            Job job;
            if (held > 0) {
                // each held-back job is looked at once a step, in its turn
                job = deferred.poll();
                deferredCount = deferred.size();
                held--;
            } else if (active.isEmpty() && deferred.isEmpty()) {
                long before = System.nanoTime();
                job = waiting.poll(50, TimeUnit.MILLISECONDS);
                idle += System.nanoTime() - before;
                awaitQueueing();
            } else {
                job = waiting.poll();
                awaitQueueing();
            }
            if (job == null) {
                break;
            }
            if (job.cancelled) {
                finish(job, FinishReason.CANCELLED, null);
                continue;
            }
            if (job.request.maxTokens() == 0 && !job.scoresPrompt()) {
                // nothing to compute: no reply, no scores (an echo of the prompt alone)
                metrics.admitted(job.request.prompt().length);
                finish(job, FinishReason.LENGTH, null);
                continue;
            }
            List<Job> twins = job.scoresPrompt() ? List.of() : twinsOf(job);
            StepModel.Sequence copy = copyOfTwin(job, twins);
            if (copy == null && twins.stream().anyMatch(Job::prefilling)) {
                deferred.add(job);
                deferredCount = deferred.size();
                continue;
            }
            try {
                TextCodec.Detokenizer detokenizer = text.detokenizer(job.request.skipSpecialTokens());
                job.reply = new ReplyStream(job.request.sampling(), job.request.constraint(), job.request.stops(),
                        id -> eos[id], detokenizer::accept, detokenizer::flush, job.request.prompt())
                        .markSpecialTokens(text::isSpecialToken);
                job.reply.configure(job.request.options());
                placeSequence(job, copy);
            } catch (RuntimeException e) {
                if (copy != null && job.sequence == null) {
                    copy.close();
                }
                finish(job, FinishReason.ERROR, "could not open a sequence: " + e.getMessage());
                continue;
            }
            metrics.admitted(job.request.prompt().length);
            active.add(job);
        }
        activeCount = active.size();
        return idle;
    }

    /**
     * Returns once no {@link #submitAll} is midway through queueing its jobs (it queues them under the admission
     * lock). A request's choices then reach this loop together: without it the loop could take the first choice
     * before the others were queued, and on a busy machine run it to its end before they came, so that they read
     * the prompt again (or took the finished one's kept sequence) instead of copying it.
     */
    private void awaitQueueing() {
        synchronized (admission) {
            // nothing to do: holding the lock once is the wait
        }
    }

    /** A copy of all but the last prompt token of a twin that has read the prompt; null when none can give one. */
    private static StepModel.Sequence copyOfTwin(Job job, List<Job> twins) {
        for (Job twin : twins) {
            if (!twin.prefilling()) {
                StepModel.Sequence copy = twin.sequence.fork(job.request.prompt().length - 1);
                if (copy != null) {
                    return copy;
                }
            }
        }
        return null;
    }

    /**
     * Gives the job its sequence: {@code copy} (a twin's), else a kept sequence of the prefix cache (taken or copied),
     * else a new one; and what its sliding-window layers keep for later copies and rewinds.
     */
    private void placeSequence(Job job, StepModel.Sequence copy) {
        // a scored prompt needs the logits of every position, so it is fed from the start
        PrefixCache.Hit hit = job.scoresPrompt() || copy != null ? null : prefixCache.take(job.request.prompt());
        if (copy != null) {
            // the twin has read the prompt: all but its last token copied, which is fed for the logits
            job.sequence = copy;
            job.fed = job.request.prompt().length - 1;
            metrics.prefixCopied();
        } else if (hit != null) {
            job.sequence = hit.sequence();
            job.fed = hit.shared();
            if (hit.copied()) {
                metrics.prefixCopied();
            }
        } else {
            job.sequence = model.open();
        }
        job.cachedTokens = job.fed;
        if (job.fed > 0) {
            metrics.promptTokensCached(job.fed);
        }
        if (prefixCache.enabled()) {
            // the next turn may render this reply anew (a template dropping its reasoning) and rewind to where it
            // began, and another request may want a copy of its start (a shared system prompt): a sliding-window
            // layer keeps the rows those need
            job.sequence.keepForRewind((int) Math.min(REWIND_MOST,
                    (long) job.request.prompt().length + job.request.maxTokens()));
        } else {
            // a job waiting for this one copies all of its prompt but the last token: a sliding-window layer keeps
            // the one row more that the copy's first query sees
            job.sequence.keepForRewind(1);
        }
    }

    /**
     * The active jobs that read (or have read) the same prompt, whose sequences a copy may come from (not scoring
     * their prompts, not cancelled): those that have read it first, the least advanced first (a sliding-window layer
     * of one that has gone on may no longer hold the rows a copy needs), then those still reading it.
     */
    private List<Job> twinsOf(Job job) {
        int[] prompt = job.request.prompt();
        List<Job> twins = new ArrayList<>();
        for (Job other : active) {
            if (!other.scoresPrompt() && !other.cancelled && other.sequence != null
                    && java.util.Arrays.equals(other.request.prompt(), prompt)) {
                twins.add(other);
            }
        }
        twins.sort(java.util.Comparator.comparing(Job::prefilling).thenComparingInt(j -> j.generated));
        return twins;
    }

    /** One batched step of every running sequence; returns the nanoseconds the model's step took. */
    private long step() {
        int budget = config.prefillTokens();
        long scoring = 0;
        // Prompts being scored go first, each in a call of its own (their every position's logits come back).
        List<Job> ended = new ArrayList<>();
        for (Job job : active) {
            if (budget > 0 && job.prefilling() && job.scoresPrompt()) {
                int chunk = Math.min(Math.min(budget, scoredRows()), job.request.prompt().length - job.fed);
                budget -= chunk;
                scoring += scorePrompt(job, chunk, ended);
            }
        }
        active.removeAll(ended);
        activeCount = active.size();
        List<Job> stepped = new ArrayList<>(active.size());
        List<StepModel.Sequence> sequences = new ArrayList<>(active.size());
        List<int[]> inputs = new ArrayList<>(active.size());
        int tokens = 0;
        for (Job job : active) {
            int[] input;
            if (job.prefilling() && job.scoresPrompt()) {
                continue; // fed by scorePrompt alone
            } else if (!job.prefilling()) {
                input = job.nextInput(1);
            } else if (budget > 0) {
                input = job.nextInput(budget);
                budget -= input.length;
            } else {
                continue;
            }
            stepped.add(job);
            sequences.add(job.sequence);
            inputs.add(input);
            tokens += input.length;
        }
        if (stepped.isEmpty()) {
            return scoring;
        }
        // a job that draws after this step without a constraint lets the model draw its token where the logits are
        TokenDraw[] draws = new TokenDraw[stepped.size()];
        for (int i = 0; i < draws.length; i++) {
            Job job = stepped.get(i);
            if (job.fed + inputs.get(i).length >= job.request.prompt().length && job.reply.drawsInModel()) {
                draws[i] = job.reply.nextDraw();
            }
        }
        StepOutput output;
        long started = System.nanoTime();
        long took;
        try {
            output = model.step(sequences, inputs, draws);
            took = System.nanoTime() - started;
            if (output.logits().length != stepped.size()) {
                throw new IllegalStateException("the model returned " + output.logits().length + " logits rows for "
                        + stepped.size() + " sequences");
            }
        } catch (RuntimeException e) {
            String message = "the model step failed: " + e.getMessage();
            for (Job job : stepped) {
                finish(job, FinishReason.ERROR, message);
            }
            active.removeAll(stepped);
            activeCount = active.size();
            return scoring + System.nanoTime() - started;
        }
        metrics.step(stepped.size(), tokens, took / 1e9);
        for (int i = 0; i < stepped.size(); i++) {
            stepped.get(i).fed += inputs.get(i).length;
        }
        int[] sampled = sampleAll(stepped, output);
        ended.clear();
        for (int i = 0; i < stepped.size(); i++) {
            Job job = stepped.get(i);
            if (job.prefilling()) {
                continue;
            }
            if (sampled[i] < 0) {
                finish(job, FinishReason.ERROR, "sampling failed: " + job.samplingError);
                ended.add(job);
            } else if (!accept(job, sampled[i])) {
                ended.add(job);
            }
        }
        active.removeAll(ended);
        activeCount = active.size();
        return scoring + took;
    }

    /** Prompt positions scored in one call: their logits rows stay within 16 M floats (64 MB). */
    private int scoredRows() {
        return Math.max(1, (1 << 24) / model.vocabSize());
    }

    /**
     * Feeds the next chunk of a scored prompt (at most {@code most} tokens) to its sequence alone, tells the listener
     * each next prompt token's log-probability, and once the prompt is read, draws the reply's first token from the
     * last row (or ends a request for no reply). Adds the job to {@code ended} when it ends; returns the model's
     * nanoseconds.
     */
    private long scorePrompt(Job job, int most, List<Job> ended) {
        int[] input = job.nextInput(most);
        int start = job.fed;
        int vocab = model.vocabSize();
        long started = System.nanoTime();
        float[] rows;
        try {
            rows = model.stepEveryRow(job.sequence, input);
            if (rows.length != (long) input.length * vocab) {
                throw new IllegalStateException("the model returned " + rows.length + " logits for " + input.length
                        + " positions of " + vocab);
            }
        } catch (RuntimeException e) {
            finish(job, FinishReason.ERROR, "the model step failed: " + e.getMessage());
            ended.add(job);
            return System.nanoTime() - started;
        }
        long took = System.nanoTime() - started;
        metrics.step(1, input.length, took / 1e9);
        job.fed += input.length;
        int[] prompt = job.request.prompt();
        List<io.moe4j.generate.TokenLogprobs> scored = new ArrayList<>(input.length);
        for (int r = 0; r < input.length && start + r + 1 < prompt.length; r++) {
            float[] row = java.util.Arrays.copyOfRange(rows, r * vocab, (r + 1) * vocab);
            scored.add(io.moe4j.generate.TokenLogprobs.of(row, vocab, prompt[start + r + 1],
                    job.request.promptLogprobs()));
        }
        if (!scored.isEmpty()) {
            job.listener.onPromptLogprobs(scored);
        }
        if (job.prefilling()) {
            return took;
        }
        if (job.request.maxTokens() == 0) {
            finish(job, FinishReason.LENGTH, null);
            ended.add(job);
            return took;
        }
        int token;
        try {
            float[] last = java.util.Arrays.copyOfRange(rows, (input.length - 1) * vocab, input.length * vocab);
            token = job.reply.draw(last, vocab, job.room());
        } catch (RuntimeException e) {
            finish(job, FinishReason.ERROR, "sampling failed: " + e.getMessage());
            ended.add(job);
            return took;
        }
        if (!accept(job, token)) {
            ended.add(job);
        }
        return took;
    }

    /**
     * The next token of every stepped sequence that has read its prompt (-1 for the others, and where sampling
     * failed). Each sequence has its own sampler, so with large vocabularies (where a top-p sort costs milliseconds)
     * they sample in parallel on the common pool; the model's step is over, so its cores are free.
     */
    private int[] sampleAll(List<Job> stepped, StepOutput output) {
        int vocab = model.vocabSize();
        int[] sampled = new int[stepped.size()];
        float[][] logits = output.logits();
        java.util.function.IntConsumer one = i -> {
            Job job = stepped.get(i);
            sampled[i] = -1;
            if (!job.prefilling() && output.drawn()[i] >= 0) {
                sampled[i] = output.drawn()[i]; // the model's draw: the reply's own rule and random number
            } else if (!job.prefilling() && logits[i] == null) {
                job.samplingError = "no token to draw: every logit is NaN or -infinity";
            } else if (!job.prefilling()) {
                try {
                    // The room the context leaves too: a constrained reply closes its JSON before the context ends.
                    sampled[i] = job.reply.draw(logits[i], vocab, job.room());
                } catch (RuntimeException e) {
                    job.samplingError = e.getMessage();
                }
            }
        };
        if (stepped.size() > 1 && (long) stepped.size() * vocab >= PARALLEL_SAMPLING_WORK) {
            java.util.stream.IntStream.range(0, stepped.size()).parallel().forEach(one);
        } else {
            for (int i = 0; i < stepped.size(); i++) {
                one.accept(i);
            }
        }
        return sampled;
    }

    /** Takes one sampled token; false when the sequence has ended. */
    private boolean accept(Job job, int token) {
        job.took(token);
        job.generated++;
        metrics.generated();
        if (job.generated == 1) {
            metrics.firstToken((System.nanoTime() - job.submittedNanos) / 1e9);
        }
        String shown = job.reply.take(token);
        if (job.request.options().logprobs() >= 0 && !job.reply.endedByToken()) {
            job.listener.onToken(shown, job.reply.lastSpecialEnds(), job.reply.lastLogprobs());
        } else if (!shown.isEmpty()) {
            job.listener.onText(shown, job.reply.lastSpecialEnds());
        }
        if (job.reply.ended()) {
            // JSON the budget closed early is complete but cut short: a length, as an unconstrained reply's
            ReplyConstraint constraint = job.request.constraint();
            finish(job, constraint != null && constraint.cutByBudget() ? FinishReason.LENGTH : FinishReason.STOP,
                    null);
            return false;
        }
        // Prompt and generated tokens together stay within the context (as vLLM counts max_model_len): the token
        // just sampled is the last one when it fills the context.
        if (job.lengthReached()) {
            finish(job, FinishReason.LENGTH, null);
            return false;
        }
        job.lastToken = token;
        return true;
    }

    /** Ends a job once: shows held-back text of a normal end, frees its sequence, tells its listener. */
    private void finish(Job job, FinishReason reason, String error) {
        if (!job.markFinished()) {
            return;
        }
        try {
            if ((reason == FinishReason.STOP || reason == FinishReason.LENGTH) && job.reply != null) {
                String tail = job.reply.tail();
                if (!tail.isEmpty()) {
                    job.listener.onText(tail, job.reply.lastSpecialEnds());
                }
            }
        } finally {
            if (job.sequence != null) {
                try {
                    if ((reason == FinishReason.STOP || reason == FinishReason.LENGTH) && prefixCache.enabled()) {
                        // kept for a request that starts the same way
                        prefixCache.keep(job.sequence, job.heldTokens(job.sequence.length()));
                    } else {
                        job.sequence.close();
                    }
                } catch (RuntimeException ignored) {
                    // The sequence is gone either way; its listener still hears the end below.
                }
            }
            metrics.finished(reason);
            job.listener.onFinish(new GenerationResult(reason, job.request.prompt().length, job.generated, error,
                    job.cachedTokens));
        }
    }
}

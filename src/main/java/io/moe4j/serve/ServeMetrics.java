package io.moe4j.serve;

import io.moe4j.generate.FinishReason;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntSupplier;

/**
 * The server's counters, rendered as Prometheus text: HTTP requests by route and status, tokens in and out, finished
 * sequences by reason, steps with their batch sizes and durations, the scheduler's own time around them, time to
 * first token, and the queue and batch now. One instance per server; every method is thread-safe.
 */
public final class ServeMetrics {
    private final Map<String, LongAdder> requests = new ConcurrentHashMap<>();
    private final Map<FinishReason, LongAdder> finished = new ConcurrentHashMap<>();
    private final LongAdder promptTokens = new LongAdder();
    private final LongAdder cachedPromptTokens = new LongAdder();
    private final LongAdder prefixCopies = new LongAdder();
    private final LongAdder generatedTokens = new LongAdder();
    private final LongAdder steps = new LongAdder();
    private final Histogram batchSize = new Histogram(1, 2, 4, 8, 16, 32, 64, 128, 256);
    private final Histogram stepTokens = new Histogram(1, 4, 16, 64, 256, 1024, 4096);
    private final Histogram stepSeconds = new Histogram(0.001, 0.0025, 0.005, 0.01, 0.015, 0.02, 0.03, 0.05, 0.1,
            0.25, 0.5, 1, 2.5);
    private final DoubleAdder hostSeconds = new DoubleAdder();
    private final Histogram timeToFirstToken = new Histogram(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30);
    private volatile IntSupplier queueLength = () -> 0;
    private volatile IntSupplier activeSequences = () -> 0;

    /** Where the gauges read the queue length and the number of active sequences. */
    void gauges(IntSupplier queueLength, IntSupplier activeSequences) {
        this.queueLength = queueLength;
        this.activeSequences = activeSequences;
    }

    public void request(String route, int status) {
        requests.computeIfAbsent(route + '\u0000' + status, k -> new LongAdder()).increment();
    }

    /** Prompt tokens a request found in a kept sequence ({@link PrefixCache}) and did not feed again. */
    /** A sequence got a copy of another's start (a kept one's, or a twin's that read the same prompt). */
    void prefixCopied() {
        prefixCopies.increment();
    }

    void promptTokensCached(int tokens) {
        cachedPromptTokens.add(tokens);
    }

    void admitted(int promptLength) {
        promptTokens.add(promptLength);
    }

    void generated() {
        generatedTokens.increment();
    }

    void firstToken(double seconds) {
        timeToFirstToken.observe(seconds);
    }

    void step(int sequences, int tokens, double seconds) {
        steps.increment();
        batchSize.observe(sequences);
        stepTokens.observe(tokens);
        stepSeconds.observe(seconds);
    }

    /** Time the scheduler spent between model steps with sequences running (admission, sampling, streaming text). */
    void hostWork(double seconds) {
        hostSeconds.add(seconds);
    }

    void finished(FinishReason reason) {
        finished.computeIfAbsent(reason, k -> new LongAdder()).increment();
    }

    public long generatedTokens() {
        return generatedTokens.sum();
    }

    public long steps() {
        return steps.sum();
    }

    /** The Prometheus text exposition of every metric. */
    public String prometheus() {
        StringBuilder out = new StringBuilder(4096);
        out.append("# HELP moe4j_http_requests_total HTTP requests answered, by route and status.\n");
        out.append("# TYPE moe4j_http_requests_total counter\n");
        new TreeMap<>(requests).forEach((key, n) -> {
            int cut = key.indexOf('\u0000');
            out.append("moe4j_http_requests_total{route=\"").append(key, 0, cut).append("\",status=\"")
                    .append(key.substring(cut + 1)).append("\"} ").append(n.sum()).append('\n');
        });
        out.append("# HELP moe4j_sequences_finished_total Generated sequences that ended, by finish reason.\n");
        out.append("# TYPE moe4j_sequences_finished_total counter\n");
        for (FinishReason r : FinishReason.values()) {
            LongAdder n = finished.get(r);
            out.append("moe4j_sequences_finished_total{reason=\"").append(r.apiName()).append("\"} ")
                    .append(n == null ? 0 : n.sum()).append('\n');
        }
        counter(out, "moe4j_prompt_tokens_total", "Prompt tokens of admitted requests.", promptTokens.sum());
        counter(out, "moe4j_prompt_tokens_cached_total", "Prompt tokens found in a kept sequence, not fed again.",
                cachedPromptTokens.sum());
        counter(out, "moe4j_prefix_copies_total", "Sequences that got a copy of another's start (a kept sequence's, "
                + "or one that read the same prompt).",
                prefixCopies.sum());
        counter(out, "moe4j_generation_tokens_total", "Tokens sampled.", generatedTokens.sum());
        counter(out, "moe4j_steps_total", "Batched model steps.", steps.sum());
        gauge(out, "moe4j_queue_length", "Requests waiting for a free sequence slot.", queueLength.getAsInt());
        gauge(out, "moe4j_active_sequences", "Sequences being stepped.", activeSequences.getAsInt());
        batchSize.write(out, "moe4j_batch_size", "Sequences per model step.");
        stepTokens.write(out, "moe4j_step_tokens", "Tokens fed per model step (prompt chunks and decode tokens).");
        stepSeconds.write(out, "moe4j_step_seconds", "Time of each batched model step (the engine's forward pass).");
        counter(out, "moe4j_scheduler_host_seconds_total", "Time the scheduler spent outside model steps while "
                + "sequences ran: admission, sampling, streaming text.", hostSeconds.sum());
        timeToFirstToken.write(out, "moe4j_time_to_first_token_seconds",
                "From admission to the queue until the first sampled token.");
        return out.toString();
    }

    /** A counter's HELP, TYPE and sample; a whole count or seconds as Java prints them. */
    private static void counter(StringBuilder out, String name, String help, Number value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" counter\n").append(name).append(' ').append(value).append('\n');
    }

    private static void gauge(StringBuilder out, String name, String help, long value) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" gauge\n").append(name).append(' ').append(value).append('\n');
    }
}

package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A bounded load run against an OpenAI-compatible server: for each concurrency, that many streaming clients share a
 * fixed number of greedy chat requests; prints total decode tokens/s, mean and p90 time to first token. Runs against
 * {@code --url} (a running {@code moe serve}), or, without it, against an in-process toy server whose step costs
 * {@code --toy-step-ms} (a fixed cost per batched step, as a memory-bound decode step has).
 *
 * <pre>java -cp target/classes:target/test-classes:$(cat cp.txt) io.moe4j.serve.ServeLoad \
 *     [--url http://127.0.0.1:8000] [--model ID] [--clients 1,4,16,64] [--requests 64] [--max-tokens 64]</pre>
 */
public final class ServeLoad {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** A request's completion tokens and seconds to its first text (-1: it showed none). */
    record Outcome(long tokens, double ttftSeconds) {
    }

    public static void main(String[] args) throws Exception {
        String url = null;
        String model = "toy";
        int[] clients = {1, 4, 16, 64};
        int requests = 64;
        int maxTokens = 64;
        double toyStepMs = 2;
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--url" -> url = v;
                case "--model" -> model = v;
                case "--clients" -> clients = Arrays.stream(v.split(",")).mapToInt(Integer::parseInt).toArray();
                case "--requests" -> requests = Integer.parseInt(v);
                case "--max-tokens" -> maxTokens = Integer.parseInt(v);
                case "--toy-step-ms" -> toyStepMs = Double.parseDouble(v);
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        OpenAiServer toy = null;
        if (url == null) {
            int most = Arrays.stream(clients).max().orElse(1);
            toy = new OpenAiServer(new ServedModel(model, new ToyModel(4096, 0, (long) (toyStepMs * 1e6), 0),
                    new ByteText()), new SchedulerConfig(most, most, 512), ServerConfig.local(0)).start();
            url = "http://127.0.0.1:" + toy.port();
        }
        System.out.printf("%8s %9s %8s %9s %12s %10s %10s%n", "clients", "requests", "tokens", "seconds", "tokens/s",
                "ttft mean", "ttft p90");
        try (HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build()) {
            for (int c : clients) {
                run(http, url, model, c, requests, maxTokens);
            }
        } finally {
            if (toy != null) {
                toy.close();
            }
        }
    }

    private static void run(HttpClient http, String url, String model, int clients, int requests, int maxTokens)
            throws Exception {
        AtomicInteger next = new AtomicInteger();
        List<Future<List<Outcome>>> futures = new ArrayList<>();
        long start = System.nanoTime();
        try (ExecutorService pool = Executors.newFixedThreadPool(clients)) {
            for (int t = 0; t < clients; t++) {
                futures.add(pool.submit(() -> {
                    List<Outcome> mine = new ArrayList<>();
                    int i;
                    while ((i = next.getAndIncrement()) < requests) {
                        mine.add(one(http, url, model, i, maxTokens));
                    }
                    return mine;
                }));
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        List<Outcome> all = new ArrayList<>();
        for (Future<List<Outcome>> f : futures) {
            all.addAll(f.get());
        }
        long tokens = all.stream().mapToLong(Outcome::tokens).sum();
        // requests whose reply showed no text (a random model's tokens may all be held back) have no time to first text
        double[] ttft = all.stream().mapToDouble(Outcome::ttftSeconds).filter(t -> t >= 0).sorted().toArray();
        String mean = ttft.length == 0 ? "-" : String.format(Locale.ROOT, "%.3fs", Arrays.stream(ttft).average()
                .orElseThrow());
        String p90 = ttft.length == 0 ? "-" : String.format(Locale.ROOT, "%.3fs",
                ttft[(int) Math.floor(0.9 * (ttft.length - 1))]);
        System.out.printf(Locale.ROOT, "%8d %9d %8d %9.2f %12.1f %10s %10s%n", clients, requests, tokens, seconds,
                tokens / seconds, mean, p90);
    }

    private static Outcome one(HttpClient http, String url, String model, int i, int maxTokens) throws Exception {
        ObjectNode body = JSON.createObjectNode().put("model", model).put("max_tokens", maxTokens)
                .put("temperature", 0).put("stream", true);
        body.putObject("stream_options").put("include_usage", true);
        body.putArray("messages").addObject().put("role", "user").put("content", "Request number " + i
                + ": tell me about mixtures of experts.");
        long start = System.nanoTime();
        HttpResponse<java.io.InputStream> r = http.send(HttpRequest.newBuilder(URI.create(url + "/v1/chat/completions"))
                .header("Content-Type", "application/json").POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                .build(), HttpResponse.BodyHandlers.ofInputStream());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("request " + i + ": HTTP " + r.statusCode() + " "
                    + new String(r.body().readAllBytes(), StandardCharsets.UTF_8));
        }
        double ttft = -1;
        long tokens = 0;
        try (BufferedReader in = new BufferedReader(new InputStreamReader(r.body(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (!line.startsWith("data: ") || line.equals("data: [DONE]")) {
                    continue;
                }
                JsonNode chunk = JSON.readTree(line.substring(6));
                if (chunk.has("error")) {
                    throw new IllegalStateException("request " + i + ": " + chunk.get("error"));
                }
                // The first text of either kind: a reasoning model streams its analysis before the answer.
                if (ttft < 0 && !(chunk.at("/choices/0/delta/content").asText("")
                        + chunk.at("/choices/0/delta/reasoning_content").asText("")).isEmpty()) {
                    ttft = (System.nanoTime() - start) / 1e9;
                }
                if (chunk.path("usage").isObject()) {
                    tokens = chunk.get("usage").get("completion_tokens").asLong();
                }
            }
        }
        return new Outcome(tokens, ttft);
    }
}

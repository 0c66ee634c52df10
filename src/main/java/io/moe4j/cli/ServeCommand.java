package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.serve.OpenAiServer;
import io.moe4j.serve.SchedulerConfig;
import io.moe4j.serve.ServedModel;
import io.moe4j.serve.ServerConfig;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;

/** {@code moe serve}: the OpenAI-compatible HTTP server with continuous batching. */
@Command(name = "serve", mixinStandardHelpOptions = true,
        description = "Serve a model over an OpenAI-compatible HTTP API (chat completions, completions, SSE "
                + "streaming), batching all running requests into one step.")
public final class ServeCommand implements Callable<Integer> {
    /** The name under which {@code --model} selects the built-in deterministic test model. */
    static final String TOY = "toy";

    /** --model (a checkpoint directory, or 'toy' for the built-in test model), --backend, --threads, --context. */
    @picocli.CommandLine.Mixin
    ModelArgs modelArgs;

    @Option(names = "--served-model-name", description = "the model id clients send (default: the directory name)")
    String servedName;

    @Option(names = "--host", defaultValue = "127.0.0.1", description = "address to listen on (default: ${DEFAULT-VALUE})")
    String host;

    @Option(names = "--port", defaultValue = "8000", description = "port (default: ${DEFAULT-VALUE}; 0 picks one)")
    int port;

    @Option(names = "--max-sequences", defaultValue = "16",
            description = "sequences stepped together at most (default: ${DEFAULT-VALUE})")
    int maxSequences;

    @Option(names = "--max-queue", defaultValue = "64",
            description = "sequences waiting behind them at most (a request's n choices count n); more get 429 "
                    + "(default: ${DEFAULT-VALUE})")
    int maxQueue;

    @Option(names = "--prefill-tokens", defaultValue = "512",
            description = "prompt tokens fed per step at most, over all joining requests (default: ${DEFAULT-VALUE})")
    int prefillTokens;

    @Option(names = "--prefix-cache", defaultValue = "4",
            description = "finished sequences kept with their KV caches, so that a request starting the same way (the "
                    + "next turn of a conversation) feeds only the rest; 0 keeps none (default: ${DEFAULT-VALUE})")
    int prefixCache;

    @Option(names = "--api-key", description = "require 'Authorization: Bearer KEY' on /v1 (default: $MOE_API_KEY, else none)")
    String apiKey;

    @Option(names = "--shutdown-grace", defaultValue = "30",
            description = "seconds running requests get to finish on shutdown (default: ${DEFAULT-VALUE})")
    int shutdownGrace;

    @Override
    public Integer call() throws InterruptedException {
        String key = apiKey != null ? apiKey : System.getenv("MOE_API_KEY");
        if (shutdownGrace < 0) {
            throw new IllegalArgumentException("--shutdown-grace must be 0 or more seconds, got " + shutdownGrace);
        }
        ServerConfig serverConfig = new ServerConfig(host, port, key, 4 << 20, Duration.ofSeconds(shutdownGrace),
                Duration.ofSeconds(5));
        if (prefixCache < 0) {
            throw new IllegalArgumentException("--prefix-cache must be 0 or more sequences, got " + prefixCache);
        }
        SchedulerConfig schedulerConfig = new SchedulerConfig(maxSequences, maxQueue, prefillTokens, prefixCache);
        OpenAiServer server = new OpenAiServer(load(), schedulerConfig, serverConfig).start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            System.err.println("moe serve: shutting down");
            server.close();
            stopped.countDown();
        }, "moe-serve-shutdown"));
        System.err.printf("moe serve: listening on http://%s:%d/v1 (max %d sequences, queue %d, prefix cache %d)%n",
                host, server.port(), maxSequences, maxQueue, prefixCache);
        stopped.await();
        return 0;
    }

    /** The model to serve: a checkpoint directory, or the built-in toy model. */
    ServedModel load() {
        if (TOY.equals(modelArgs.model.toString())) {
            return new ServedModel(servedName != null ? servedName : TOY, new ToyModel(4096, 64, 0, 0), new ByteText());
        }
        io.moe4j.generate.MoeModel loaded = modelArgs.loadWarmedUp();
        String id = servedName != null ? servedName
                : modelArgs.model.toAbsolutePath().normalize().getFileName().toString();
        return new ServedModel(id, new io.moe4j.serve.ModelSteps(loaded.model()), new io.moe4j.serve.ModelText(loaded),
                io.moe4j.serve.SamplingDefaults.of(loaded.generationConfig()));
    }
}

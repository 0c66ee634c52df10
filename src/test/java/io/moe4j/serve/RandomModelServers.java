package io.moe4j.serve;

import com.openai.client.OpenAIClient;
import com.openai.client.okhttp.OpenAIOkHttpClient;
import io.moe4j.generate.MoeModel;
import io.moe4j.model.ModelOptions;
import io.moe4j.testing.RandomModels;
import java.nio.file.Path;
import java.time.Duration;

/**
 * A random Qwen3-MoE and a random gpt-oss (real tokenizers and chat templates), each served on a local port with an
 * OpenAI SDK client: the fixture of the server tests that need real vocabularies and chat formats.
 *
 * @param qwen         served as {@code qwen3-random}
 * @param gptOss       served as {@code gpt-oss-random}
 */
record RandomModelServers(MoeModel qwen, MoeModel gptOss, OpenAiServer qwenServer, OpenAiServer gptOssServer,
                          OpenAIClient qwenClient, OpenAIClient gptOssClient) implements AutoCloseable {

    /** Writes both models under {@code dir} (with the given weight seeds), loads them on 2 threads and serves them. */
    static RandomModelServers start(Path dir, long qwenSeed, long gptOssSeed, SchedulerConfig scheduler) {
        MoeModel qwen = MoeModel.load(RandomModels.qwen3(dir.resolve("qwen3"), qwenSeed),
                ModelOptions.defaults().withThreads(2));
        MoeModel gptOss = MoeModel.load(RandomModels.gptOss(dir.resolve("gpt-oss"), gptOssSeed),
                ModelOptions.defaults().withThreads(2));
        OpenAiServer qwenServer = serve("qwen3-random", qwen, scheduler);
        OpenAiServer gptOssServer = serve("gpt-oss-random", gptOss, scheduler);
        return new RandomModelServers(qwen, gptOss, qwenServer, gptOssServer, client(qwenServer),
                client(gptOssServer));
    }

    private static OpenAiServer serve(String id, MoeModel model, SchedulerConfig scheduler) {
        ServedModel served = new ServedModel(id, new ModelSteps(model.model()), new ModelText(model));
        return new OpenAiServer(served, scheduler, ServerConfig.local(0)).start();
    }

    private static OpenAIClient client(OpenAiServer server) {
        return OpenAIOkHttpClient.builder().baseUrl("http://127.0.0.1:" + server.port() + "/v1").apiKey("unused")
                .maxRetries(0).timeout(Duration.ofSeconds(120)).build();
    }

    /** The served id of the gpt-oss model ({@code gpt}) or the Qwen3 one. */
    static String id(boolean gpt) {
        return gpt ? "gpt-oss-random" : "qwen3-random";
    }

    /** The SDK client of the gpt-oss server ({@code gpt}) or the Qwen3 one. */
    OpenAIClient client(boolean gpt) {
        return gpt ? gptOssClient : qwenClient;
    }

    @Override
    public void close() {
        qwenClient.close();
        gptOssClient.close();
        for (AutoCloseable c : new AutoCloseable[] {qwenServer, gptOssServer, qwen, gptOss}) {
            try {
                c.close();
            } catch (Exception ignored) {
                // closing what the test opened; the next one still closes
            }
        }
    }
}

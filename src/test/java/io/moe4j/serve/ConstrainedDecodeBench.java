package io.moe4j.serve;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.moe4j.generate.ChatOutputs;
import io.moe4j.generate.MoeModel;
import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.Sampler;
import io.moe4j.generate.SamplingParams;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.testing.RandomModels;
import io.moe4j.text.chat.ChatRequest;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

/**
 * Mask cost per generated token on gpt-oss's 201k-token vocabulary against the decode step of a model, in real
 * constrained generations: a random two-layer gpt-oss ({@link RandomModels#gptOss}) writes JSON for the five
 * schemas of {@link AgentServerTest}, and each step's mask, draw and decode are timed apart. Batch 1, one sequence.
 *
 * <pre>{@code
 * mvn -o -q test-compile && java --add-modules jdk.incubator.vector -cp target/classes:target/test-classes:$(mvn -o -q dependency:build-classpath -Dmdep.outputFile=/dev/stdout) \
 *     io.moe4j.serve.ConstrainedDecodeBench [threads] [documents]
 * }</pre>
 */
public final class ConstrainedDecodeBench {
    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 2;
        int documents = args.length > 1 ? Integer.parseInt(args[1]) : 20;
        ObjectMapper json = new ObjectMapper();
        Path dir = Files.createTempDirectory("moe4j-bench");
        try (MoeModel model = MoeModel.load(RandomModels.gptOss(dir.resolve("gpt-oss"), 1),
                ModelOptions.defaults().withThreads(threads))) {
            ArrayNode messages = json.createArrayNode();
            messages.addObject().put("role", "user").put("content", "Describe something as JSON");
            String prompt = model.chatTemplate().orElseThrow().render(ChatRequest.of(messages, true));
            int[] ids = model.tokenizer().encode(prompt);
            ChatOutputs outputs = model.chatOutputs();
            long t0 = System.nanoTime();
            outputs.trie();
            double trieMs = (System.nanoTime() - t0) / 1e6;
            int vocab = model.model().vocabSize();
            long maskNanos = 0;
            long answerMaskNanos = 0;
            long drawNanos = 0;
            long decodeNanos = 0;
            int steps = 0;
            int answerSteps = 0;
            long[] answerMasks = new long[documents * 128];
            for (int d = 0; d < documents + 2; d++) {
                boolean warmup = d < 2;
                String schema = AgentServerTest.SCHEMAS.get(d % AgentServerTest.SCHEMAS.size());
                ReplyConstraint c = outputs.constraint(prompt, JsonGrammar.of(json.readTree(schema), outputs.trie()),
                        96);
                boolean[] mask = new boolean[Math.max(vocab, c.maskSize())];
                Sampler sampler = new Sampler(new SamplingParams(1.0, 0, 1.0, 0, d));
                try (Session session = model.model().newSession()) {
                    float[] logits = session.prefillLast(ids);
                    for (int made = 0; made < 96; made++) {
                        boolean answer = c.inAnswer();
                        long a = System.nanoTime();
                        c.fillAllowed(mask, 96 - made);
                        long b = System.nanoTime();
                        int token = sampler.sample(logits, 0, vocab, mask);
                        c.accept(token);
                        long e = System.nanoTime();
                        if (model.eosIds().contains(token)) {
                            break;
                        }
                        logits = session.decode(token);
                        long f = System.nanoTime();
                        if (!warmup) {
                            steps++;
                            maskNanos += b - a;
                            drawNanos += e - b;
                            decodeNanos += f - e;
                            if (answer) {
                                answerMasks[answerSteps++] = b - a;
                                answerMaskNanos += b - a;
                            }
                        }
                    }
                }
            }
            long[] sorted = Arrays.copyOf(answerMasks, answerSteps);
            Arrays.sort(sorted);
            System.out.printf("gpt-oss vocabulary %d (model rows %d), trie built in %.0f ms, %d threads%n",
                    outputs.vocabulary().size(), vocab, trieMs, threads);
            System.out.printf("%d documents, %d steps (%d inside the JSON answer)%n", documents, steps, answerSteps);
            System.out.printf("mask, every step:        mean %.3f ms%n", maskNanos / 1e6 / steps);
            System.out.printf("mask, JSON answer steps: mean %.3f ms, median %.3f ms, p90 %.3f ms%n",
                    answerMaskNanos / 1e6 / answerSteps, sorted[sorted.length / 2] / 1e6,
                    sorted[(int) (sorted.length * 0.9)] / 1e6);
            System.out.printf("masked draw:             mean %.3f ms%n", drawNanos / 1e6 / steps);
            System.out.printf("decode step (batch 1):   mean %.3f ms%n", decodeNanos / 1e6 / steps);
            System.out.printf("mask / decode step:      %.1f%%%n", 100.0 * maskNanos / decodeNanos);
        }
    }

}

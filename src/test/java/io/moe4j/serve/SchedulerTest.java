package io.moe4j.serve;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.generate.FinishReason;
import io.moe4j.generate.ReplyConstraint;
import io.moe4j.generate.constraint.JsonConstraint;
import io.moe4j.generate.constraint.JsonGrammar;
import io.moe4j.generate.constraint.TokenTrie;
import io.moe4j.generate.constraint.TokenVocabulary;
import io.moe4j.generate.SamplingParams;
import io.moe4j.serve.toy.ByteText;
import io.moe4j.serve.toy.ToyModel;
import io.moe4j.testing.SchemaCheck;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(60)
class SchedulerTest {
    private static final ByteText TEXT = new ByteText();

    private static GenerationRequest request(String prompt, int maxTokens, SamplingParams sampling, String... stops) {
        return new GenerationRequest(TEXT.encode(prompt), sampling, maxTokens, List.of(stops));
    }

    private static Collector.Outcome alone(ToyModel model, GenerationRequest request) throws Exception {
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(1, 4, 512), new ServeMetrics())) {
            Collector c = new Collector();
            s.submit(request, c);
            return c.await();
        }
    }

    /** A step that stands in for the toy's own: one that records, fails or widens what the toy computes. */
    private interface Step {
        float[][] apply(List<StepModel.Sequence> sequences, List<int[]> tokens);
    }

    /** The toy model with {@code vocab}-wide logits rows from {@code step}. */
    private static StepModel withStep(ToyModel toy, int vocab, Step step) {
        return new StepModel() {
            @Override
            public int vocabSize() {
                return vocab;
            }

            @Override
            public int contextLength() {
                return toy.contextLength();
            }

            @Override
            public Sequence open() {
                return toy.open();
            }

            @Override
            public float[][] step(List<Sequence> sequences, List<int[]> tokens) {
                return step.apply(sequences, tokens);
            }
        };
    }

    @Test
    void batchedAnswersEqualAnswersServedAloneAndSequencesAreFreed() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        List<GenerationRequest> requests = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            SamplingParams sampling = i % 3 == 0 ? SamplingParams.greedy()
                    : new SamplingParams(0.8, i % 5, 0.9, 0, 1000 + i);
            requests.add(request("prompt number " + i + " " + "x".repeat(i * 7), 10 + i, sampling));
        }
        List<Collector.Outcome> expected = new ArrayList<>();
        for (GenerationRequest r : requests) {
            expected.add(alone(model, r));
        }
        ServeMetrics metrics = new ServeMetrics();
        // 16 prompt tokens a step: the longer prompts take several steps while others already decode.
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(8, 32, 16), metrics)) {
            List<Collector> collectors = new ArrayList<>();
            for (GenerationRequest r : requests) {
                Collector c = new Collector();
                s.submit(r, c);
                collectors.add(c);
            }
            for (int i = 0; i < requests.size(); i++) {
                Collector.Outcome got = collectors.get(i).await();
                assertThat(got).as("request %d", i).isEqualTo(expected.get(i));
                assertThat(got.result().reason()).isEqualTo(FinishReason.LENGTH);
                assertThat(got.result().completionTokens()).isEqualTo(10 + i);
                assertThat(got.text()).hasSize(10 + i);
            }
        }
        assertThat(model.largestBatch()).isBetween(2, 8);
        assertThat(model.openSequences()).isZero();
        assertThat(metrics.prometheus()).contains("moe4j_sequences_finished_total{reason=\"length\"} 24");
    }

    /**
     * Unconstrained requests, greedy and sampled, let the model draw their tokens (a draw on the step for each, from
     * the step that ends the prompt on, with the reply's own random numbers): the answers equal those drawn from the
     * logits.
     */
    @Test
    void unconstrainedRequestsLetTheModelDrawTheirTokens() throws Exception {
        ToyModel toy = new ToyModel(512, 0, 0, 0);
        List<GenerationRequest> requests = List.of(
                request("a greedy prompt", 12, SamplingParams.greedy()),
                request("a sampled prompt that is longer", 12, new SamplingParams(0.8, 5, 0.9, 0, 7)),
                request("another greedy one", 9, SamplingParams.greedy()));
        List<Collector.Outcome> expected = new ArrayList<>();
        for (GenerationRequest r : requests) {
            expected.add(alone(toy, r));
        }
        java.util.concurrent.atomic.AtomicInteger flaggedRows = new java.util.concurrent.atomic.AtomicInteger();
        StepModel flagging = new StepModel() {
            @Override
            public int vocabSize() {
                return toy.vocabSize();
            }

            @Override
            public int contextLength() {
                return toy.contextLength();
            }

            @Override
            public Sequence open() {
                return toy.open();
            }

            @Override
            public float[][] step(List<Sequence> sequences, List<int[]> tokens) {
                return toy.step(sequences, tokens);
            }

            @Override
            public io.moe4j.model.StepOutput step(List<Sequence> sequences, List<int[]> tokens,
                                                  io.moe4j.model.TokenDraw[] draws) {
                for (io.moe4j.model.TokenDraw d : draws) {
                    if (d != null) {
                        flaggedRows.incrementAndGet();
                    }
                }
                return io.moe4j.model.StepOutput.of(toy.step(sequences, tokens), draws);
            }
        };
        try (Scheduler s = new Scheduler(flagging, TEXT, new SchedulerConfig(4, 8, 6), new ServeMetrics())) {
            List<Collector> collectors = new ArrayList<>();
            for (GenerationRequest r : requests) {
                Collector c = new Collector();
                s.submit(r, c);
                collectors.add(c);
            }
            for (int i = 0; i < requests.size(); i++) {
                assertThat(collectors.get(i).await()).as("request %d", i).isEqualTo(expected.get(i));
            }
        }
        // a draw on the step for every token of every reply and for nothing else (not while a prompt is still fed)
        assertThat(flaggedRows.get()).isEqualTo(expected.get(0).result().completionTokens()
                + expected.get(1).result().completionTokens() + expected.get(2).result().completionTokens());
    }

    @Test
    void joiningPromptsShareTheStepBudget() throws Exception {
        ToyModel toy = new ToyModel(1024, 0, 0, 0);
        List<int[]> steps = java.util.Collections.synchronizedList(new ArrayList<>());
        StepModel recording = withStep(toy, toy.vocabSize(), (sequences, tokens) -> {
            steps.add(new int[] {sequences.size(), tokens.stream().mapToInt(t -> t.length).sum()});
            return toy.step(sequences, tokens);
        });
        try (Scheduler s = new Scheduler(recording, TEXT, new SchedulerConfig(8, 8, 16), new ServeMetrics())) {
            List<Collector> collectors = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                Collector c = new Collector();
                s.submit(request("a long prompt " + i + " " + "p".repeat(100), 30, SamplingParams.greedy()), c);
                collectors.add(c);
            }
            for (Collector c : collectors) {
                assertThat(c.await().result().completionTokens()).isEqualTo(30);
            }
        }
        int fedTokens = 0;
        for (int[] step : steps) {
            // At most one token per sequence beyond the 16 prompt tokens a step may carry.
            assertThat(step[1]).isLessThanOrEqualTo(16 + step[0]);
        }
        for (int[] step : steps) {
            fedTokens += step[1];
        }
        // Everything fed: 6 prompts and 29 fed-back tokens each (the last sampled token is never fed).
        assertThat(fedTokens).isEqualTo(6 * (TEXT.encode("a long prompt 0 " + "p".repeat(100)).length + 29));
    }

    @Test
    void largeVocabulariesSampleInParallelWithTheSameTokens() throws Exception {
        ToyModel toy = new ToyModel(512, 0, 0, 0);
        int vocab = 1 << 16;
        // The toy's logits padded to a large vocabulary, so sampling takes the parallel path when batched.
        StepModel wide = withStep(toy, vocab, (sequences, tokens) -> {
            float[][] narrow = toy.step(sequences, tokens);
            float[][] out = new float[narrow.length][vocab];
            for (int i = 0; i < narrow.length; i++) {
                java.util.Arrays.fill(out[i], -30f);
                System.arraycopy(narrow[i], 0, out[i], 0, narrow[i].length);
            }
            return out;
        });
        List<GenerationRequest> requests = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            requests.add(request("wide " + i, 12, new SamplingParams(0.9, 0, 0.95, 0, 77 + i)));
        }
        List<Collector.Outcome> expected = new ArrayList<>();
        for (GenerationRequest r : requests) {
            try (Scheduler s = new Scheduler(wide, TEXT, new SchedulerConfig(1, 1, 64), new ServeMetrics())) {
                Collector c = new Collector();
                s.submit(r, c);
                expected.add(c.await());
            }
        }
        try (Scheduler s = new Scheduler(wide, TEXT, new SchedulerConfig(8, 8, 512), new ServeMetrics())) {
            List<Collector> collectors = new ArrayList<>();
            for (GenerationRequest r : requests) {
                Collector c = new Collector();
                s.submit(r, c);
                collectors.add(c);
            }
            for (int i = 0; i < requests.size(); i++) {
                assertThat(collectors.get(i).await()).as("request %d", i).isEqualTo(expected.get(i));
            }
        }
        assertThat(toy.largestBatch()).isGreaterThan(1);
    }

    /**
     * The step-time histogram counts every step with at least the model's own cost (the toy's 10 ms a step), and the
     * scheduler's time around the steps is a separate, smaller total.
     */
    @Test
    void stepTimesAndTheSchedulersOwnTimeAreMeasuredApart() throws Exception {
        ToyModel slow = new ToyModel(4096, 0, 10_000_000L, 0);
        ServeMetrics metrics = new ServeMetrics();
        try (Scheduler s = new Scheduler(slow, TEXT, new SchedulerConfig(4, 8, 512), metrics)) {
            List<Collector> collectors = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                Collector c = new Collector();
                s.submit(request("prompt " + i, 8, SamplingParams.greedy()), c);
                collectors.add(c);
            }
            for (Collector c : collectors) {
                c.await();
            }
        }
        Map<String, Double> samples = new HashMap<>();
        for (String line : metrics.prometheus().split("\n")) {
            if (!line.startsWith("#") && !line.contains("{")) {
                String[] parts = line.split(" ");
                samples.put(parts[0], Double.parseDouble(parts[1]));
            }
        }
        double steps = samples.get("moe4j_steps_total");
        assertThat(steps).isGreaterThanOrEqualTo(8);
        assertThat(samples.get("moe4j_step_seconds_count")).isEqualTo(steps);
        assertThat(samples.get("moe4j_step_seconds_sum")).isGreaterThanOrEqualTo(steps * 0.010);
        assertThat(samples.get("moe4j_scheduler_host_seconds_total")).isGreaterThan(0.0)
                .isLessThan(samples.get("moe4j_step_seconds_sum"));
    }

    @Test
    void historyDecidesTheAnswer() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        String a = alone(model, request("first prompt", 20, SamplingParams.greedy())).text();
        String b = alone(model, request("second prompt", 20, SamplingParams.greedy())).text();
        assertThat(a).isNotEqualTo(b).matches("[a-z ,.]{20}");
    }

    @Test
    void eosEndsWithStopAndIsNotShown() throws Exception {
        ToyModel model = new ToyModel(512, 3, 0, 0);
        int stopped = 0;
        for (int i = 0; i < 10; i++) {
            Collector.Outcome o = alone(model, request("eos " + i, 200, SamplingParams.greedy()));
            if (o.result().reason() == FinishReason.STOP) {
                stopped++;
                // The eos token counts as generated but adds no text.
                assertThat(o.text()).hasSize(o.result().completionTokens() - 1);
            }
        }
        assertThat(stopped).isEqualTo(10);
    }

    /**
     * A request that asks for special tokens to stay out of its text gets a detokenizer that leaves them out, one
     * that does not gets them (here the codec's "special" ids are the lowercase vowels).
     */
    @Test
    void skippingSpecialTokensReachesTheDetokenizer() throws Exception {
        TextCodec vowelsSpecial = new TextCodec() {
            @Override
            public int[] renderChat(ChatPrompt prompt) {
                return TEXT.renderChat(prompt);
            }

            @Override
            public int[] encode(String prompt) {
                return TEXT.encode(prompt);
            }

            @Override
            public int[] eosIds() {
                return TEXT.eosIds();
            }

            @Override
            public Detokenizer detokenizer() {
                return TEXT.detokenizer();
            }

            @Override
            public Detokenizer detokenizer(boolean skipSpecialTokens) {
                Detokenizer bytes = TEXT.detokenizer();
                return !skipSpecialTokens ? bytes : new Detokenizer() {
                    @Override
                    public String accept(int id) {
                        return "aeiou".indexOf(id) >= 0 ? "" : bytes.accept(id);
                    }

                    @Override
                    public String flush() {
                        return bytes.flush();
                    }
                };
            }
        };
        ToyModel model = new ToyModel(512, 0, 0, 0);
        String[] texts = new String[2];
        for (int skip = 0; skip < 2; skip++) {
            try (Scheduler s = new Scheduler(model, vowelsSpecial, new SchedulerConfig(1, 4, 512), new ServeMetrics())) {
                Collector c = new Collector();
                s.submit(new GenerationRequest(TEXT.encode("special test"), SamplingParams.greedy(), 80, List.of(),
                        null, skip == 1), c);
                texts[skip] = c.await().text();
            }
        }
        assertThat(texts[0]).containsAnyOf("a", "e", "i", "o", "u");
        assertThat(texts[1]).isEqualTo(texts[0].replaceAll("[aeiou]", ""));
    }

    @Test
    void stopStringsCutTheTextEvenAcrossTokens() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        String full = alone(model, request("stop test", 60, SamplingParams.greedy())).text();
        String stop = full.substring(20, 23);
        int at = full.indexOf(stop);
        Collector.Outcome o = alone(model, request("stop test", 60, SamplingParams.greedy(), "never", stop));
        assertThat(o.result().reason()).isEqualTo(FinishReason.STOP);
        assertThat(o.text()).isEqualTo(full.substring(0, at));
        assertThat(o.result().completionTokens()).isEqualTo(at + stop.length());
    }

    @Test
    void contextEndStopsWithLength() throws Exception {
        ToyModel model = new ToyModel(32, 0, 0, 0);
        Collector.Outcome o = alone(model, request("twenty bytes prompt.", 1000, SamplingParams.greedy()));
        assertThat(o.result().reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(o.result().promptTokens() + o.result().completionTokens()).isEqualTo(32);
        try (Scheduler s = new Scheduler(model, TEXT, SchedulerConfig.defaults(), new ServeMetrics())) {
            assertThatThrownBy(() -> s.submit(request("x".repeat(32), 1, SamplingParams.greedy()), new Collector()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("context holds 32");
        }
    }

    /** The toy's byte-level ids as a constraint sees them: 0-255 one byte each, the three specials no text. */
    private static final TokenVocabulary BYTES = new TokenVocabulary() {
        @Override
        public int size() {
            return ByteText.VOCAB_SIZE;
        }

        @Override
        public byte[] bytes(int id) {
            return id < 256 ? new byte[] {(byte) id} : new byte[0];
        }

        @Override
        public boolean isSpecial(int id) {
            return id >= 256;
        }
    };
    private static final TokenTrie BYTE_TRIE = new TokenTrie(BYTES);
    private static final String NAME_SCHEMA = """
            {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"],
             "additionalProperties": false}""";

    /** A fresh constraint to {@link #NAME_SCHEMA} (a constraint follows one sequence). */
    private static ReplyConstraint nameConstraint() throws Exception {
        JsonGrammar grammar = JsonGrammar.of(new ObjectMapper().readTree(NAME_SCHEMA), BYTE_TRIE);
        return ReplyConstraint.answerOnly(new JsonConstraint(grammar, BYTE_TRIE, BYTES, ByteText.EOS), BYTES);
    }

    /**
     * A constrained reply whose token budget reaches past the context closes its JSON in the room the context
     * leaves: the toy prefers letters and spaces, so greedy decoding writes the string on until the constraint
     * makes it close, which it does only if told the context's room and not just what max_tokens leaves.
     */
    @Test
    void aConstrainedReplyClosesItsJsonBeforeTheContextEnds() throws Exception {
        ToyModel model = new ToyModel(64, 0, 0, 0);
        String prompt = "a prompt of 20 bytes";
        int room = 64 - TEXT.encode(prompt).length;
        GenerationRequest far = new GenerationRequest(TEXT.encode(prompt), SamplingParams.greedy(), 1000, List.of(),
                nameConstraint());
        Collector.Outcome o = alone(model, far);
        // Quotes and braces sit far below letters, so the string runs on until only its end fits: the whole room,
        // and a length, since the budget closed the string.
        assertThat(o.result().reason()).as(o.text()).isEqualTo(FinishReason.LENGTH);
        assertThat(o.result().completionTokens()).as(o.text()).isEqualTo(room);
        JsonNode answer = new ObjectMapper().readTree(o.text());
        assertThat(SchemaCheck.errors(new ObjectMapper().readTree(NAME_SCHEMA), answer)).isEmpty();
        assertThat(answer.get("name").asText()).as(o.text()).isNotEmpty();
        // The same reply as with max tokens capped at the room, as the HTTP server asks for it.
        GenerationRequest capped = new GenerationRequest(TEXT.encode(prompt), SamplingParams.greedy(), room,
                List.of(), nameConstraint());
        assertThat(alone(model, capped)).isEqualTo(o);
        assertThat(model.openSequences()).isZero();
    }

    @Test
    void aConstrainedReplyThatCannotFitTheContextIsRefused() throws Exception {
        ToyModel model = new ToyModel(40, 0, 0, 0);
        try (Scheduler s = new Scheduler(model, TEXT, SchedulerConfig.defaults(), new ServeMetrics())) {
            // {"name":""} and the eos need 12 tokens; 35 prompt bytes leave 5.
            GenerationRequest r = new GenerationRequest(TEXT.encode("x".repeat(35)), SamplingParams.greedy(), 100,
                    List.of(), nameConstraint());
            assertThatThrownBy(() -> s.submit(r, new Collector())).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("needs at least 12 tokens").hasMessageContaining("context leaves 5");
        }
    }

    @Test
    void fullQueueRefusesAndCancelFreesWaitingAndRunning() throws Exception {
        ToyModel model = new ToyModel(4096, 0, 2_000_000, 0);
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(1, 2, 512), new ServeMetrics())) {
            Collector running = new Collector();
            Ticket runningTicket = s.submit(request("long one", 3000, SamplingParams.greedy()), running);
            waitUntil(() -> s.activeSequences() == 1);
            Collector w1 = new Collector();
            Collector w2 = new Collector();
            Ticket waitingTicket = s.submit(request("waits", 5, SamplingParams.greedy()), w1);
            s.submit(request("waits too", 5, SamplingParams.greedy()), w2);
            assertThatThrownBy(() -> s.submit(request("one too many", 5, SamplingParams.greedy()), new Collector()))
                    .isInstanceOfSatisfying(AdmissionException.class, e -> assertThat(e.queueFull()).isTrue());
            waitingTicket.cancel();
            assertThat(w1.await().result().reason()).isEqualTo(FinishReason.CANCELLED);
            runningTicket.cancel();
            runningTicket.cancel();
            Collector.Outcome cancelled = running.await();
            assertThat(cancelled.result().reason()).isEqualTo(FinishReason.CANCELLED);
            assertThat(cancelled.result().completionTokens()).isLessThan(3000);
            assertThat(w2.await().result().reason()).isEqualTo(FinishReason.LENGTH);
        }
        assertThat(model.openSequences()).isZero();
    }

    @Test
    void shutdownFinishesWithinGraceThenCancels() throws Exception {
        ToyModel model = new ToyModel(4096, 0, 1_000_000, 0);
        Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(2, 4, 512), new ServeMetrics());
        Collector shortOne = new Collector();
        Collector longOne = new Collector();
        s.submit(request("short", 5, SamplingParams.greedy()), shortOne);
        s.submit(request("long", 4000, SamplingParams.greedy()), longOne);
        s.shutdown(Duration.ofMillis(300));
        assertThat(shortOne.await().result().reason()).isEqualTo(FinishReason.LENGTH);
        assertThat(longOne.await().result().reason()).isEqualTo(FinishReason.CANCELLED);
        assertThatThrownBy(() -> s.submit(request("late", 5, SamplingParams.greedy()), new Collector()))
                .isInstanceOfSatisfying(AdmissionException.class, e -> assertThat(e.queueFull()).isFalse());
        assertThat(model.openSequences()).isZero();
    }

    @Test
    void aFailingStepEndsItsBatchWithErrorAndTheEngineGoesOn() throws Exception {
        ToyModel toy = new ToyModel(512, 0, 0, 0);
        CountDownLatch fail = new CountDownLatch(1);
        StepModel flaky = withStep(toy, toy.vocabSize(), (sequences, tokens) -> {
            if (fail.getCount() > 0) {
                fail.countDown();
                throw new IllegalStateException("device lost");
            }
            return toy.step(sequences, tokens);
        });
        try (Scheduler s = new Scheduler(flaky, TEXT, SchedulerConfig.defaults(), new ServeMetrics())) {
            Collector first = new Collector();
            s.submit(request("first", 5, SamplingParams.greedy()), first);
            GenerationResult failed = first.await().result();
            assertThat(failed.reason()).isEqualTo(FinishReason.ERROR);
            assertThat(failed.error()).contains("device lost");
            Collector second = new Collector();
            s.submit(request("second", 5, SamplingParams.greedy()), second);
            assertThat(second.await().result().reason()).isEqualTo(FinishReason.LENGTH);
        }
        assertThat(toy.openSequences()).isZero();
    }

    private static void waitUntil(java.util.function.BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("condition not met within 10 s");
            }
            Thread.sleep(2);
        }
    }

    /**
     * A request that starts as a finished one's sequence does (the next turn of a conversation) feeds only the rest:
     * its answer is the one it gets with nothing kept, the cached tokens are counted, and every kept sequence is
     * closed with the scheduler.
     */
    @Test
    void aKeptSequenceServesTheNextTurnAsAFreshOneWould() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        GenerationRequest first = request("You are terse. Tell me a story", 12, SamplingParams.greedy());
        Collector.Outcome firstAlone = alone(model, first);
        int[] next = concat(concat(first.prompt(), TEXT.encode(firstAlone.text())), TEXT.encode(" And then?"));
        GenerationRequest second = new GenerationRequest(next, SamplingParams.greedy(), 12, List.of());
        Collector.Outcome secondAlone = alone(model, second);

        ServeMetrics metrics = new ServeMetrics();
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(1, 4, 512, 2), metrics)) {
            Collector one = new Collector();
            s.submit(first, one);
            assertThat(one.await().text()).isEqualTo(firstAlone.text());
            Collector two = new Collector();
            s.submit(second, two);
            assertThat(two.await().text()).isEqualTo(secondAlone.text());
            // the first sequence held its prompt and all of its reply but the last token (never fed)
            long cached = first.prompt().length + firstAlone.result().completionTokens() - 1;
            assertThat(metrics.prometheus()).contains("moe4j_prompt_tokens_cached_total " + cached);
            assertThat(model.openSequences()).as("the second, kept").isEqualTo(1);
        }
        assertThat(model.openSequences()).as("kept sequences closed with the scheduler").isZero();
    }

    /** The cache keeps at most its size, closing the oldest; a request sharing nothing opens a fresh sequence. */
    @Test
    void theCacheKeepsItsSize() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(1, 4, 512, 2), new ServeMetrics())) {
            for (String prompt : List.of("alpha one", "bravo two", "charlie three", "delta four")) {
                Collector c = new Collector();
                s.submit(request(prompt, 3, SamplingParams.greedy()), c);
                c.await();
            }
            assertThat(model.openSequences()).isEqualTo(2);
        }
        assertThat(model.openSequences()).isZero();
    }

    /**
     * A request's choices (the same prompt, queued together) read the prompt once: the others wait for the first to
     * have read it, then copy its sequence and feed only the last prompt token; each still answers as it does alone.
     */
    @Test
    void choicesOfOnePromptCopyTheSequenceThatReadIt() throws Exception {
        ToyModel model = new ToyModel(512, 0, 0, 0);
        String prompt = "a long shared prompt " + "that takes several steps to read ".repeat(6);
        List<GenerationRequest> requests = new ArrayList<>();
        List<Collector.Outcome> alone = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            GenerationRequest r = request(prompt, 10, new SamplingParams(1.0, 0, 1.0, 0.0, 40 + i));
            requests.add(r);
            alone.add(alone(model, r));
        }
        int forksBefore = model.forks();
        ServeMetrics metrics = new ServeMetrics();
        // 16 prompt tokens a step: the prompt takes several steps to read
        try (Scheduler s = new Scheduler(model, TEXT, new SchedulerConfig(4, 8, 16), metrics)) {
            List<Collector> collectors = List.of(new Collector(), new Collector(), new Collector());
            s.submitAll(requests, new ArrayList<>(collectors));
            for (int i = 0; i < 3; i++) {
                assertThat(collectors.get(i).await().text()).as("choice %d", i).isEqualTo(alone.get(i).text());
                assertThat(collectors.get(i).await().result().cachedTokens()).isEqualTo(i == 0 ? 0
                        : requests.get(i).prompt().length - 1);
            }
        }
        assertThat(model.forks() - forksBefore).isEqualTo(2);
        assertThat(metrics.prometheus()).contains("moe4j_prefix_copies_total 2");
        assertThat(model.openSequences()).isZero();
    }

    /** Choices held back to copy a twin count against the queue: its bound holds. */
    @Test
    void choicesWaitingForATwinCountAgainstTheQueue() throws Exception {
        ToyModel slow = new ToyModel(4096, 0, 2_000_000, 0);
        try (Scheduler s = new Scheduler(slow, TEXT, new SchedulerConfig(2, 4, 4), new ServeMetrics())) {
            String prompt = "a prompt read four tokens a step " + "x".repeat(2000);
            List<GenerationRequest> four = new ArrayList<>();
            List<GenerationListener> listeners = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                four.add(request(prompt, 50, SamplingParams.greedy()));
                listeners.add(new Collector());
            }
            s.submitAll(four, listeners);
            // the first reads the prompt; the other three wait for it
            waitUntil(() -> s.activeSequences() == 1 && s.queueLength() == 3);
            assertThatThrownBy(() -> s.submitAll(List.of(request("b", 5, SamplingParams.greedy()),
                    request("c", 5, SamplingParams.greedy())), List.of(new Collector(), new Collector())))
                    .isInstanceOf(AdmissionException.class).hasMessageContaining("3 waiting of at most 4");
            s.submit(request("d", 5, SamplingParams.greedy()), new Collector());
            assertThat(s.queueLength()).isLessThanOrEqualTo(4);
        }
    }

    private static int[] concat(int[] a, int[] b) {
        int[] out = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }
}

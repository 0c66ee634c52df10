package io.moe4j.text.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.text.Normalizer;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;
import java.util.zip.GZIPInputStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** Properties of the three real tokenizers beyond the reference lines: edge cases, lookups, streaming. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TokenizerEdgeCaseTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final Map<String, Tokenizer> tokenizers = new HashMap<>();
    private final Map<String, JsonNode> files = new HashMap<>();

    private Tokenizer tokenizer(String name) {
        return tokenizers.computeIfAbsent(name, n -> Tokenizer.load(TokenizerFixtures.modelDir(n)));
    }

    /** The tokenizer.json read independently, as a tree. */
    private JsonNode file(String name) {
        return files.computeIfAbsent(name, n -> {
            try (InputStream in = new GZIPInputStream(
                    Files.newInputStream(TokenizerFixtures.modelDir(n).resolve("tokenizer.json.gz")))) {
                return JSON.readTree(in);
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    private static JsonNode config(String name) throws IOException {
        return JSON.readTree(TokenizerFixtures.modelDir(name).resolve("tokenizer_config.json").toFile());
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void emptyTextHasNoTokensAndNoIdsDecodeToNothing(String name) {
        Tokenizer t = tokenizer(name);
        assertThat(t.encode("")).isEmpty();
        assertThat(t.decode(new int[0])).isEmpty();
        assertThat(t.incrementalDecoder().flush()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void everyVocabularyAndAddedTokenLooksUpBothWays(String name) {
        Tokenizer t = tokenizer(name);
        JsonNode root = file(name);
        int maxId = -1;
        for (Map.Entry<String, JsonNode> e : root.get("model").get("vocab").properties()) {
            int id = e.getValue().asInt();
            maxId = Math.max(maxId, id);
            assertThat(t.token(id)).isEqualTo(e.getKey());
            assertThat(t.id(e.getKey())).hasValue(id);
        }
        for (JsonNode added : root.get("added_tokens")) {
            int id = added.get("id").asInt();
            maxId = Math.max(maxId, id);
            assertThat(t.token(id)).isEqualTo(added.get("content").asText());
            assertThat(t.isSpecial(id)).as("special %s", added).isEqualTo(added.get("special").asBoolean());
            // An added token written in the text is that one token.
            assertThat(t.encode(added.get("content").asText())).containsExactly(id);
        }
        assertThat(t.addedTokens()).hasSize(root.get("added_tokens").size());
        assertThat(t.vocabSize()).isEqualTo(maxId + 1);
        assertThat(t.isSpecial(-1)).isFalse();
        assertThat(t.isSpecial(t.vocabSize())).isFalse();
        assertThat(t.id("no such token \u0000")).isEmpty();
        assertThatThrownBy(() -> t.token(t.vocabSize())).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(String.valueOf(t.vocabSize()));
        assertThatThrownBy(() -> t.token(-1)).isInstanceOf(IllegalArgumentException.class);
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void bosAndEosComeFromTheConfig(String name) throws IOException {
        Tokenizer t = tokenizer(name);
        JsonNode config = config(name);
        for (String key : new String[] {"bos_token", "eos_token"}) {
            JsonNode n = config.get(key);
            String expected = n == null || n.isNull() ? null : n.isTextual() ? n.asText() : n.get("content").asText();
            var token = key.equals("bos_token") ? t.bosToken() : t.eosToken();
            var id = key.equals("bos_token") ? t.bosId() : t.eosId();
            if (expected == null) {
                assertThat(token).isEmpty();
                assertThat(id).isEmpty();
            } else {
                assertThat(token).hasValue(expected);
                assertThat(id).hasValue(t.id(expected).orElseThrow());
                assertThat(t.token(id.getAsInt())).isEqualTo(expected);
            }
        }
    }

    @Test
    void encodeAddsNoBosEvenWhereTheConfigAsksForOne() throws IOException {
        assertThat(config("deepseek-v3").get("add_bos_token").asBoolean()).isTrue();
        Tokenizer t = tokenizer("deepseek-v3");
        assertThat(t.encode("Hello")).doesNotContain(t.bosId().orElseThrow());
    }

    /**
     * A raw prompt ({@link Tokenizer#encodePrompt}, transformers' {@code tokenizer(text)}) takes the BOS token in
     * front exactly where tokenizer_config.json sets add_bos_token (DeepSeek-V3), and an EOS token behind where it
     * sets add_eos_token (none of the three); otherwise it is {@link Tokenizer#encode}.
     */
    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void aRawPromptTakesTheBosTheConfigAsksFor(String name) throws IOException {
        Tokenizer t = tokenizer(name);
        JsonNode config = config(name);
        String text = "Hello world";
        int[] plain = t.encode(text);
        int[] prompt = t.encodePrompt(text);
        boolean bos = config.path("add_bos_token").asBoolean(false);
        assertThat(config.path("add_eos_token").asBoolean(false)).isFalse();
        if (bos) {
            assertThat(prompt).hasSize(plain.length + 1);
            assertThat(prompt[0]).isEqualTo(t.bosId().orElseThrow());
            assertThat(java.util.Arrays.copyOfRange(prompt, 1, prompt.length)).containsExactly(plain);
        } else {
            assertThat(prompt).containsExactly(plain);
        }
        assertThat(bos).isEqualTo(name.equals("deepseek-v3"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void specialLookingTextThatIsNoTokenIsOrdinaryText(String name) {
        Tokenizer t = tokenizer(name);
        String text = "<|not_a_token|><|im_start <｜no▁such｜>";
        int[] ids = t.encode(text);
        assertThat(ids.length).isGreaterThan(3);
        for (int id : ids) {
            assertThat(t.isSpecial(id)).as("token %s", t.token(id)).isFalse();
        }
        assertThat(t.decode(ids)).isEqualTo(text);
    }

    @Test
    void specialTokensSplitTheTextAroundThem() {
        Tokenizer t = tokenizer("qwen3");
        int end = t.id("<|im_end|>").orElseThrow();
        int[] ids = t.encode("a<|im_end|>b");
        assertThat(ids).containsExactly(concat(t.encode("a"), new int[] {end}, t.encode("b")));
        assertThat(t.decode(ids)).isEqualTo("a<|im_end|>b");
        assertThat(t.decode(ids, true)).isEqualTo("ab");
        // <think> is an added token but not a special one: kept even when special tokens are skipped.
        int[] think = t.encode("<think>x</think>");
        assertThat(t.decode(think, true)).isEqualTo("<think>x</think>");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void randomUnicodeTextRoundTrips(String name) {
        Tokenizer t = tokenizer(name);
        boolean nfc = name.equals("qwen3");
        Random random = new Random(19);
        for (int round = 0; round < 300; round++) {
            String text = randomText(random, 1 + random.nextInt(40));
            String expected = nfc ? Normalizer.normalize(text, Normalizer.Form.NFC) : text;
            int[] ids = t.encode(text);
            assertThat(t.decode(ids)).as("round trip of %s", text).isEqualTo(expected);
            assertThat(streamed(t, ids)).isEqualTo(expected);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void streamingMatchesDecodeOnRandomIds(String name) {
        // Random ids cut characters anywhere and produce ill-formed UTF-8: the stream must still equal decode.
        Tokenizer t = tokenizer(name);
        Random random = new Random(5);
        for (int round = 0; round < 500; round++) {
            int[] ids = random.ints(random.nextInt(12), 0, t.vocabSize() + 50).toArray();
            assertThat(streamed(t, ids)).as("ids %s", Arrays.toString(ids)).isEqualTo(t.decode(ids));
        }
    }

    @Test
    void partialCharactersAreHeldBackAndNeverEmittedAsReplacement() {
        Tokenizer t = tokenizer("gpt-oss");
        byte[] utf8 = "😀".getBytes(StandardCharsets.UTF_8);
        int[] byteIds = new int[utf8.length];
        for (int i = 0; i < utf8.length; i++) {
            byteIds[i] = t.id(ByteLevel.encodeByte(utf8[i])).orElseThrow();
        }
        IncrementalDecoder decoder = t.incrementalDecoder();
        assertThat(decoder.next(byteIds[0])).isEmpty();
        assertThat(decoder.next(byteIds[1])).isEmpty();
        assertThat(decoder.next(byteIds[2])).isEmpty();
        assertThat(decoder.hasPending()).isTrue();
        assertThat(decoder.next(byteIds[3])).isEqualTo("😀");
        assertThat(decoder.hasPending()).isFalse();
        // A sequence cut short decodes to one replacement character, in decode and at the end of a stream.
        int[] cut = Arrays.copyOf(byteIds, 2);
        assertThat(t.decode(cut)).isEqualTo("\uFFFD");
        IncrementalDecoder unfinished = t.incrementalDecoder();
        assertThat(unfinished.next(cut[0]) + unfinished.next(cut[1])).isEmpty();
        assertThat(unfinished.flush()).isEqualTo("\uFFFD");
    }

    @Test
    void idsThatNameNoTokenAreSkipped() {
        // A model's embedding can have more rows than the tokenizer has tokens; decode skips those ids.
        Tokenizer t = tokenizer("qwen3");
        int[] hello = t.encode("hello");
        int[] withGaps = concat(new int[] {t.vocabSize() + 7}, hello, new int[] {Integer.MAX_VALUE});
        assertThat(t.decode(withGaps)).isEqualTo("hello");
        assertThat(streamed(t, withGaps)).isEqualTo("hello");
    }

    @Test
    void unpairedSurrogatesAreRejected() {
        Tokenizer t = tokenizer("gpt-oss");
        assertThatThrownBy(() -> t.encode("ab\uD83Dcd")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("index 2");
        assertThatThrownBy(() -> t.encode("x\uDE00")).isInstanceOf(IllegalArgumentException.class);
        assertThat(t.decode(t.encode("\uD83D\uDE00"))).isEqualTo("\uD83D\uDE00");
    }

    @ParameterizedTest
    @ValueSource(strings = {"gpt-oss", "qwen3", "deepseek-v3"})
    void aVeryLongWordEncodesInReasonableTime(String name) {
        // One pre-token of 200,000 characters: the merge queue keeps this near n log n.
        Tokenizer t = tokenizer(name);
        String word = "ab".repeat(100_000);
        int[] ids = assertTimeoutPreemptively(Duration.ofSeconds(30), () -> t.encode(word));
        assertThat(t.decode(ids)).isEqualTo(word);
    }

    @Test
    void aTokenizerIsSafeToShareBetweenThreads() throws InterruptedException {
        Tokenizer t = tokenizer("deepseek-v3");
        String[] texts = new String[64];
        int[][] expected = new int[texts.length][];
        Random random = new Random(3);
        for (int i = 0; i < texts.length; i++) {
            texts[i] = randomText(random, 30);
        }
        Tokenizer fresh = Tokenizer.load(TokenizerFixtures.modelDir("deepseek-v3"));
        for (int i = 0; i < texts.length; i++) {
            expected[i] = t.encode(texts[i]);
        }
        Thread[] threads = new Thread[4];
        int[] failures = new int[threads.length];
        for (int k = 0; k < threads.length; k++) {
            int me = k;
            threads[k] = new Thread(() -> {
                for (int round = 0; round < 20; round++) {
                    for (int i = 0; i < texts.length; i++) {
                        if (!Arrays.equals(fresh.encode(texts[i]), expected[i])) {
                            failures[me]++;
                        }
                    }
                }
            });
            threads[k].start();
        }
        for (Thread thread : threads) {
            thread.join();
        }
        assertThat(failures).containsOnly(0);
    }

    private static String streamed(Tokenizer t, int[] ids) {
        IncrementalDecoder decoder = t.incrementalDecoder();
        StringBuilder out = new StringBuilder();
        for (int id : ids) {
            out.append(decoder.next(id));
        }
        return out.append(decoder.flush()).toString();
    }

    private static int[] concat(int[]... parts) {
        return Arrays.stream(parts).flatMapToInt(Arrays::stream).toArray();
    }

    /** Text from many scripts and classes: letters, marks, digits, spaces of all kinds, emoji, apostrophes. */
    static String randomText(Random random, int pieces) {
        String[] pools = {
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789", " \t\n\r\u00a0\u2003\u3000\u000b\u0085",
            "'\"!?.,;:-_()[]{}<>/\\|@#$%^&*+=~`", "éèêëàâäôöûüçñßøåÀÉÎÕÜ", "e\u0301a\u0308o\u0302\u0327",
            "中文分词测试日本語のテキストカタカナ한국어문장", "مرحباПриветΣσςΑλφα", "😀🚀👍🏽🇫🇷\u200d\ufe0f", "ǅǈᾈ\u02b0ﬁ①½²",
            "'s'S'T're'VE'm'LL'd", "\uD835\uDC00\uD840\uDC00",
        };
        StringBuilder out = new StringBuilder();
        for (int i = 0; i < pieces; i++) {
            String pool = pools[random.nextInt(pools.length)];
            int[] cps = pool.codePoints().toArray();
            int n = 1 + random.nextInt(5);
            for (int k = 0; k < n; k++) {
                out.appendCodePoint(cps[random.nextInt(cps.length)]);
            }
        }
        return out.toString();
    }
}

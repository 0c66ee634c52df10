package io.moe4j.bench.model;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The bench's synthetic models: loadable by {@link Model#load} in every preset's layout, and their byte counts. */
class SyntheticModelTest {

    /** Each preset's layout and scheme with shrunken sizes (the real ones are gigabytes). */
    static ModelShape tiny(ModelPreset p) {
        return switch (p) {
            case GPT_OSS_20B -> new ModelShape(ModelShape.Family.GPT_OSS, 64, 2, 24, 4, 2, 16, 8, 32, 4, 64, 0, 300,
                    8, 0, 0, null);
            case QWEN3_30B_A3B -> new ModelShape(ModelShape.Family.QWEN3_MOE, 256, 1, 48, 4, 2, 32, 8, 128, 2, 128,
                    0, 300, 0, 0, 0, null);
            case QWEN3_235B_A22B -> new ModelShape(ModelShape.Family.QWEN3_MOE, 256, 2, 94, 8, 2, 32, 8, 128, 4, 128,
                    0, 300, 0, 0, 0, null);
            case MIXTRAL_8X7B -> new ModelShape(ModelShape.Family.MIXTRAL, 128, 1, 32, 4, 2, 32, 8, 8, 2, 256, 0,
                    300, 0, 0, 0, null);
            case DEEPSEEK_V3 -> new ModelShape(ModelShape.Family.DEEPSEEK_V3, 256, 2, 61, 4, 4, 0, 16, 256, 4, 128,
                    384, 300, 0, 1, 1, new ModelShape.Mla(128, 128, 64, 32, 64));
        };
    }

    @ParameterizedTest
    @EnumSource(ModelPreset.class)
    void everyPresetsLayoutLoadsAndDecodesOnBothBackends(ModelPreset p, @TempDir Path tmp) {
        ModelShape s = tiny(p);
        Path dir = tmp.resolve("m");
        AtomicLong written = new AtomicLong();
        assertThat(SyntheticModel.writeIfAbsent(dir, s, 7, written::addAndGet)).isTrue();
        assertThat(written.get()).isEqualTo(SyntheticModel.checkpointBytes(s));
        float[] cpu = decodeTwice(dir, "cpu");
        float[] emulation = decodeTwice(dir, "emulation");
        assertThat(cpu).hasSize(s.vocab());
        for (float v : cpu) {
            assertThat(v).isFinite();
        }
        // the cpu backend runs the same model as the reference: same logits up to float rounding
        assertThat(relativeL2(cpu, emulation)).isLessThan(1e-2);
        // and the weights are not degenerate: the logits differ between tokens
        assertThat(spread(cpu)).isGreaterThan(1e-3);
    }

    @Test
    void aWrittenModelIsReusedAndAnotherShapeRewritten(@TempDir Path tmp) throws IOException {
        ModelShape s = tiny(ModelPreset.GPT_OSS_20B);
        Path dir = tmp.resolve("m");
        assertThat(SyntheticModel.writeIfAbsent(dir, s, 7, n -> { })).isTrue();
        assertThat(SyntheticModel.writeIfAbsent(dir, s, 7, n -> { })).isFalse();
        assertThat(SyntheticModel.isWritten(dir, s.withLayers(1))).isFalse();
        assertThat(SyntheticModel.writeIfAbsent(dir, s.withLayers(1), 7, n -> { })).isTrue();
        assertThat(new ObjectMapper().readTree(dir.resolve("config.json").toFile()).get("num_hidden_layers").asInt())
                .isEqualTo(1);
        assertThat(Files.exists(tmp.resolve("m.partial"))).isFalse();
    }

    /**
     * The bytes a token reads, against a count from the shapes by hand: top-k experts of each MoE layer, every
     * attention and dense linear, the norms, lm_head and one embedding row.
     */
    @ParameterizedTest
    @EnumSource(ModelPreset.class)
    void bytesPerTokenMatchAnIndependentCount(ModelPreset p) {
        for (ModelShape s : new ModelShape[] {tiny(p), p.shape()}) {
            assertThat(TokenBytes.of(s)).isEqualTo(byHand(s));
        }
    }

    /** The files on disk hold exactly the bytes the accounting counts, tensor by tensor. */
    @Test
    void theFilesHoldTheCountedTensors(@TempDir Path tmp) throws IOException {
        for (ModelPreset p : ModelPreset.values()) {
            ModelShape s = tiny(p);
            Path dir = tmp.resolve(p.cliName());
            SyntheticModel.writeIfAbsent(dir, s, 7, n -> { });
            Map<String, Long> sizes = tensorSizes(dir);
            long total = sizes.values().stream().mapToLong(Long::longValue).sum();
            assertThat(total).isEqualTo(SyntheticModel.checkpointBytes(s));
            long perExpertLayer = sizes.entrySet().stream().filter(e -> e.getKey().startsWith("model.layers."
                    + (s.layers() - 1) + ".") && e.getKey().contains(".experts.")).mapToLong(Map.Entry::getValue).sum();
            assertThat(perExpertLayer * s.topK() / s.experts())
                    .isEqualTo(byHand(s).experts() / moeLayers(s));
            assertThat(sizes.get("lm_head.weight")).isEqualTo(byHand(s).lmHead());
        }
    }

    @Test
    void deepSeekNeedsExpertsInEightGroups(@TempDir Path tmp) {
        ModelShape s = tiny(ModelPreset.DEEPSEEK_V3).withExperts(12);
        assertThatThrownBy(() -> SyntheticModel.writeIfAbsent(tmp.resolve("d"), s, 1, n -> { }))
                .hasMessageContaining("multiple of 8");
    }

    @Test
    void memoryFitKeepsWhatFitsAndSaysWhatWasCut() {
        ModelShape gptOss = ModelPreset.GPT_OSS_20B.shape();
        ModelShape fit = MemoryFit.fit(gptOss, null, null, 6L << 30);
        assertThat(SyntheticModel.checkpointBytes(fit)).isLessThanOrEqualTo(6L << 30);
        assertThat(SyntheticModel.checkpointBytes(fit.withLayers(fit.layers() + 1))).isGreaterThan(6L << 30);
        assertThat(fit.experts()).isEqualTo(32);
        assertThat(MemoryFit.fit(gptOss, null, null, 1L << 50).layers()).isEqualTo(24);
        assertThat(MemoryFit.fit(gptOss, 3, null, 1).layers()).isEqualTo(3);
        // DeepSeek-V3: one MoE layer of 256 experts is 11 GB; the fit keeps one MoE layer with fewer experts
        ModelShape ds = MemoryFit.fit(ModelPreset.DEEPSEEK_V3.shape(), null, null, 6L << 30);
        assertThat(ds.layers()).isEqualTo(4);
        assertThat(ds.experts()).isLessThan(256).isGreaterThanOrEqualTo(8);
        assertThat(ds.experts() % 8).isZero();
        assertThat(SyntheticModel.checkpointBytes(ds)).isLessThanOrEqualTo(6L << 30);
    }

    private static int moeLayers(ModelShape s) {
        int n = 0;
        for (int l = 0; l < s.layers(); l++) {
            n += s.isMoe(l) ? 1 : 0;
        }
        return n;
    }

    /** The per-token bytes from the architecture's formulas. */
    private static TokenBytes byHand(ModelShape s) {
        long h = s.hidden();
        long bf16 = 2;
        long embeddingRow = h * bf16;
        long norms = (2L * s.layers() + 1) * h * bf16;
        long lmHead = s.vocab() * h * bf16;
        long attention = 0;
        long experts = 0;
        long dense = 0;
        int moe = moeLayers(s);
        long q = (long) s.heads() * s.headDim();
        long kv = (long) s.kvHeads() * s.headDim();
        long i = s.moeIntermediate();
        switch (s.family()) {
            case GPT_OSS -> {
                attention = s.layers() * ((q * h + 2 * kv * h + h * q) * bf16 + (q + 2 * kv + h) * bf16
                        + s.heads() * bf16);
                dense = s.layers() * (s.experts() * h + s.experts()) * bf16;
                // MXFP4: half a byte a weight, one scale byte per 32; bf16 bias rows
                long perExpert = (2 * i * h + h * i) / 2 + (2 * i * h + h * i) / 32 + (2 * i + h) * bf16;
                experts = moe * s.topK() * perExpert;
            }
            case QWEN3_MOE -> {
                attention = s.layers() * (fp8b(q, h) + 2 * fp8b(kv, h) + fp8b(h, q));
                norms += s.layers() * 2L * s.headDim() * bf16;
                dense = s.layers() * s.experts() * h * bf16;
                experts = moe * s.topK() * (2 * fp8b(i, h) + fp8b(h, i));
            }
            case MIXTRAL -> {
                attention = s.layers() * (q * h + 2 * kv * h + h * q + 4 * 8);
                dense = s.layers() * s.experts() * h * bf16;
                experts = moe * s.topK() * (3 * h * i + 3 * 8);
            }
            case DEEPSEEK_V3 -> {
                ModelShape.Mla m = s.mla();
                long heads = s.heads();
                attention = s.layers() * (fp8b(m.qLoraRank(), h) + fp8b(heads * (m.nopeDim() + m.ropeDim()), m.qLoraRank())
                        + fp8b(m.kvLoraRank() + m.ropeDim(), h) + fp8b(heads * (m.nopeDim() + m.vDim()), m.kvLoraRank())
                        + fp8b(h, heads * m.vDim()));
                norms += s.layers() * (long) (m.qLoraRank() + m.kvLoraRank()) * bf16;
                long denseLayers = s.layers() - moe;
                long di = s.denseIntermediate();
                long si = (long) s.moeIntermediate() * s.sharedExperts();
                dense = denseLayers * (2 * fp8b(di, h) + fp8b(h, di))
                        + moe * (s.experts() * h * bf16 + s.experts() * 4L + 2 * fp8b(si, h) + fp8b(h, si));
                experts = moe * s.topK() * (2 * fp8b(i, h) + fp8b(h, i));
            }
        }
        return new TokenBytes(embeddingRow, attention, experts, dense, norms, lmHead);
    }

    /** An FP8 block weight [out, in]: a byte a weight and an F32 scale per 128 × 128 block. */
    private static long fp8b(long out, long in) {
        return out * in + 4 * ((out + 127) / 128) * ((in + 127) / 128);
    }

    private static float[] decodeTwice(Path dir, String backend) {
        try (Model m = Model.load(dir, ModelOptions.defaults().withBackend(backend).withThreads(2));
             Session s = m.newSession()) {
            s.prefillLast(new int[] {1, 2, 3});
            s.decode(5);
            return s.decode(7);
        }
    }

    private static double relativeL2(float[] a, float[] b) {
        double num = 0;
        double den = 0;
        for (int i = 0; i < a.length; i++) {
            num += (a[i] - b[i]) * (double) (a[i] - b[i]);
            den += (double) b[i] * b[i];
        }
        return Math.sqrt(num / den);
    }

    private static double spread(float[] v) {
        double min = Double.MAX_VALUE;
        double max = -Double.MAX_VALUE;
        for (float x : v) {
            min = Math.min(min, x);
            max = Math.max(max, x);
        }
        return max - min;
    }

    /** Tensor name → data bytes, from the safetensors headers of every shard in the index. */
    private static Map<String, Long> tensorSizes(Path dir) throws IOException {
        ObjectMapper json = new ObjectMapper();
        Map<String, Long> sizes = new HashMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(x -> x.toString().endsWith(".safetensors")).toList()) {
                try (RandomAccessFile raf = new RandomAccessFile(f.toFile(), "r")) {
                    byte[] len = new byte[8];
                    raf.readFully(len);
                    byte[] header = new byte[(int) ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getLong()];
                    raf.readFully(header);
                    JsonNode root = json.readTree(new String(header, StandardCharsets.UTF_8));
                    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
                        Map.Entry<String, JsonNode> e = it.next();
                        if (!e.getKey().equals("__metadata__")) {
                            JsonNode o = e.getValue().get("data_offsets");
                            sizes.put(e.getKey(), o.get(1).asLong() - o.get(0).asLong());
                        }
                    }
                }
            }
        }
        return sizes;
    }
}

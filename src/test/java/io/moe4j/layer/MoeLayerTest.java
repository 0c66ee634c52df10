package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.cli.ForwardJob;
import io.moe4j.conformance.ConformanceCases;
import io.moe4j.routing.Routing;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.SimpleFormatter;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/** MoeLayer behaviour beyond the conformance cases: batch edges, expert parallelism, top-k = E, bad calls. */
class MoeLayerTest {
    private static final MoeLayerOptions EMU = MoeLayerOptions.defaults().withBackend("emulation").withThreads(2);

    private static float[] input(String name) {
        Path dir = ConformanceCases.dir(name);
        try (MoeLayer l = MoeLayer.load(dir, 0, EMU)) {
            return ForwardJob.readInput(dir.resolve("io.safetensors"), "hidden_states", l.config().hidden());
        }
    }

    @Test
    void emptyBatchGivesEmptyOutput() {
        try (MoeLayer layer = MoeLayer.load(ConformanceCases.dir("qwen3_bf16_norm"), 0, EMU)) {
            MoeOutput out = layer.forward(new float[0], 0);
            assertThat(out.output()).isEmpty();
            assertThat(out.routing().ids()).isEmpty();
        }
    }

    @Test
    void oneTokenMatchesItsRowOfTheBatch() {
        String name = "deepseek_bf16_grouped";
        float[] x = input(name);
        try (MoeLayer layer = MoeLayer.load(ConformanceCases.dir(name), 0, EMU)) {
            int h = layer.config().hidden();
            MoeOutput all = layer.forward(x, x.length / h);
            for (int t : new int[] {0, 3}) {
                MoeOutput one = layer.forward(Arrays.copyOfRange(x, t * h, (t + 1) * h), 1);
                assertThat(one.routing().ids()).containsExactly(
                        Arrays.copyOfRange(all.routing().ids(), t * layer.config().topK(), (t + 1) * layer.config().topK()));
                for (int c = 0; c < h; c++) {
                    assertThat(one.output()[c]).isCloseTo(all.output()[t * h + c], within(1e-6f));
                }
            }
        }
    }

    /** Expert parallelism: layers holding disjoint expert sets add up to the whole layer. */
    @Test
    void expertShardsSumToTheWholeLayer() {
        String name = "qwen3_bf16_norm";
        float[] x = input(name);
        Path dir = ConformanceCases.dir(name);
        try (MoeLayer whole = MoeLayer.load(dir, 0, EMU);
             MoeLayer even = MoeLayer.load(dir, 0, EMU.withLocalExperts(IntStream.range(0, 16).filter(e -> e % 2 == 0).toArray()));
             MoeLayer odd = MoeLayer.load(dir, 0, EMU.withLocalExperts(IntStream.range(0, 16).filter(e -> e % 2 == 1).toArray()))) {
            int t = x.length / whole.config().hidden();
            float[] a = even.forward(x, t).output();
            float[] b = odd.forward(x, t).output();
            float[] w = whole.forward(x, t).output();
            assertThat(even.weights().numExperts()).isEqualTo(8);
            double norm = 0;
            for (float v : a) {
                norm += v * v;
            }
            assertThat(norm).as("an expert shard contributes").isPositive();
            for (int i = 0; i < w.length; i++) {
                assertThat(a[i] + b[i]).isCloseTo(w[i], within(1e-5f));
            }
        }
    }

    @Test
    void topKEqualToExpertCountRoutesToEveryExpert(@TempDir Path tmp) throws IOException {
        Path src = ConformanceCases.dir("qwen3_bf16_nonorm");
        try (Stream<Path> files = Files.list(src)) {
            for (Path f : files.toList()) {
                Files.copy(f, tmp.resolve(f.getFileName()));
            }
        }
        Path config = tmp.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"num_experts_per_tok\": 2", "\"num_experts_per_tok\": 8"));
        float[] x = input("qwen3_bf16_nonorm");
        try (MoeLayer all = MoeLayer.load(tmp, 0, EMU)) {
            int t = x.length / all.config().hidden();
            MoeOutput out = all.forward(x, t);
            for (int i = 0; i < t; i++) {
                assertThat(Arrays.copyOfRange(out.routing().ids(), i * 8, i * 8 + 8)).containsExactly(0, 1, 2, 3, 4, 5, 6, 7);
                double sum = 0;
                for (int j = 0; j < 8; j++) {
                    sum += out.routing().weight(i, j);
                }
                assertThat(sum).isCloseTo(1.0, within(1e-5));
            }
            // Each single-expert shard contributes softmax_e · expert_e(x); together they are the layer.
            float[] total = new float[out.output().length];
            for (int e = 0; e < 8; e++) {
                try (MoeLayer one = MoeLayer.load(tmp, 0, EMU.withLocalExperts(new int[] {e}))) {
                    float[] part = one.forward(x, t).output();
                    for (int i = 0; i < total.length; i++) {
                        total[i] += part[i];
                    }
                }
            }
            for (int i = 0; i < total.length; i++) {
                assertThat(total[i]).isCloseTo(out.output()[i], within(1e-5f));
            }
        }
    }

    @Test
    void wrongInputSizeIsAClearError() {
        try (MoeLayer layer = MoeLayer.load(ConformanceCases.dir("mixtral_bf16"), 0, EMU)) {
            assertThatThrownBy(() -> layer.forward(new float[10], 1)).isInstanceOf(MoeException.class)
                    .hasMessageContaining("tokens × hidden = 1 × 64");
        }
    }

    @Test
    void layerOutOfRangeOrUnknownBackendIsAClearError() {
        Path dir = ConformanceCases.dir("mixtral_bf16");
        assertThatThrownBy(() -> MoeLayer.load(dir, 3, EMU)).hasMessageContaining("layer 3 is out of range");
        assertThatThrownBy(() -> MoeLayer.load(dir, 0, EMU.withBackend("warp-drive")))
                .isInstanceOf(MoeException.class).hasMessageContaining("warp-drive");
    }

    /** A user's activation override on a weight-only layer makes the experts quantize their inputs. */
    @Test
    void activationOverrideQuantizesExpertInputs() {
        String name = "gptoss_mxfp4";
        float[] x = input(name);
        Path dir = ConformanceCases.dir(name);
        float[] plain;
        try (MoeLayer layer = MoeLayer.load(dir, 0, EMU)) {
            plain = layer.forward(x, x.length / layer.config().hidden()).output();
        }
        String old = System.getProperty("moe4j.mxfp4.activation");
        System.setProperty("moe4j.mxfp4.activation", "fp8");
        try (MoeLayer layer = MoeLayer.load(dir, 0, EMU)) {
            assertThat(layer.weights().a13()).isNotEqualTo(io.moe4j.quant.ActivationQuant.NONE);
            assertThat(layer.selection().logLine()).contains("fp8");
            float[] fp8 = layer.forward(x, x.length / layer.config().hidden()).output();
            double diff = 0;
            double norm = 0;
            for (int i = 0; i < plain.length; i++) {
                diff += (fp8[i] - plain[i]) * (fp8[i] - plain[i]);
                norm += plain[i] * plain[i];
            }
            double rel = Math.sqrt(diff / norm);
            assertThat(rel).as("fp8 activations change the result, a little").isGreaterThan(1e-4).isLessThan(0.1);
        } finally {
            if (old == null) {
                System.clearProperty("moe4j.mxfp4.activation");
            } else {
                System.setProperty("moe4j.mxfp4.activation", old);
            }
        }
    }

    /** A cpu layer routes on its backend's router, says so in the log, and chooses what the host router chooses. */
    @Test
    void cpuLayerRoutesOnTheBackendsRouter() {
        List<String> log = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord r) {
                log.add(new SimpleFormatter().formatMessage(r));
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger jul = Logger.getLogger(MoeLayer.class.getName());
        jul.addHandler(capture);
        try {
            for (String name : List.of("deepseek_bf16_grouped", "gptoss_bf16", "llama4_bf16_top1")) {
                float[] x = input(name);
                Path dir = ConformanceCases.dir(name);
                log.clear();
                try (MoeLayer cpu = MoeLayer.load(dir, 0, EMU.withBackend("cpu"));
                     MoeLayer host = MoeLayer.load(dir, 0, EMU)) {
                    int t = x.length / cpu.config().hidden();
                    Routing got = cpu.forward(x, t).routing();
                    Routing want = host.forward(x, t).routing();
                    assertThat(got.ids()).as(name).containsExactly(want.ids());
                    for (int i = 0; i < want.weights().length; i++) {
                        assertThat(got.weights()[i]).as(name).isCloseTo(want.weights()[i],
                                within(2e-7f * Math.abs(want.weights()[i]) + 1e-30f));
                    }
                }
                assertThat(log).as(name).anyMatch(l -> l.startsWith("layer 0: router on cpu ("));
            }
        } finally {
            jul.removeHandler(capture);
        }
    }

    /**
     * The CPU packs its own copy of the experts (routed and shared) and cuda uploads them: the loaded codes,
     * concatenated for FP8 blocks, are released once copied, and the layer still computes what emulation, which reads
     * them, computes. (cuda only where a device is.)
     */
    @ParameterizedTest
    @ValueSource(strings = {"cpu", "cuda"})
    void backendsWithTheirOwnCopyReleaseTheLoadedExperts(String backend) {
        if (backend.equals("cuda")) {
            io.moe4j.backend.cuda.driver.CudaProbe probe = io.moe4j.backend.cuda.driver.CudaRuntime.probe();
            assumeTrue(probe.available(), () -> "no usable CUDA device: " + probe.reason());
        }
        String name = "deepseek_ct_fp8_block";
        float[] x = input(name);
        Path dir = ConformanceCases.dir(name);
        try (MoeLayer copied = MoeLayer.load(dir, 0, MoeLayerOptions.defaults().withBackend(backend).withThreads(2));
             MoeLayer emulation = MoeLayer.load(dir, 0, EMU)) {
            assertThat(copied.hasSharedExperts()).isTrue();
            assertThatThrownBy(() -> copied.weights().w13().data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0))
                    .isInstanceOf(IllegalStateException.class);
            assertThatCode(() -> emulation.weights().w13().data().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0))
                    .as("emulation reads the loaded codes").doesNotThrowAnyException();
            int t = x.length / copied.config().hidden();
            float[] got = copied.forward(x, t).output();
            float[] want = emulation.forward(x, t).output();
            assertThat(io.moe4j.testing.Norms.relL2(got, want)).isLessThan(1e-4);
        }
    }
}

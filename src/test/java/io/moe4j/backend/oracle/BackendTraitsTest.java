package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.backend.BackendTraits;
import io.moe4j.backend.MoeProblem;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.util.List;

import static io.moe4j.backend.oracle.FakeBackends.problem;
import static io.moe4j.backend.oracle.FakeBackends.scheme;
import static org.assertj.core.api.Assertions.assertThat;

/** Round-up sizes, layouts and activation variants as data; the priority order. */
class BackendTraitsTest {

    /** The seed's round-ups, as a CUDA backend would state them. */
    static final BackendTraits SEED_LIKE = BackendTraits.withLayout("triton")
            .align(1, 64)
            .align(WeightFormat.MXFP4, 256, 128)
            .align(WeightFormat.NVFP4, 128, 128)
            .layout(WeightFormat.MXFP4, "marlin");

    @ParameterizedTest(name = "{0} H{1} I{2} → H{3} I{4}")
    @CsvSource({
            "MXFP4, 2880, 2880, 3072, 2944",
            "MXFP4, 3072, 2944, 3072, 2944",
            "MXFP4, 7168, 2048, 7168, 2048",
            "NVFP4, 4096, 14336, 4096, 14336",
            "NVFP4, 2880, 1000, 2944, 1024",
            "BF16, 2880, 2880, 2880, 2880",
            "BF16, 2048, 100, 2048, 128",
            "INT4_GROUP, 5, 1, 5, 64"})
    void roundsUpPerWeightFormat(WeightFormat w, int h, int i, int ph, int pi) {
        MoeProblem p = problem(scheme("s", w, ActivationFormat.NONE), h, i, 8, 2);
        BackendTraits.PaddedSizes s = SEED_LIKE.padded(p);
        assertThat(s).isEqualTo(new BackendTraits.PaddedSizes(h, i, ph, pi));
        assertThat(s.padded()).isEqualTo(h != ph || i != pi);
    }

    @Test
    void layoutsAndVariants() {
        assertThat(SEED_LIKE.layoutFor(WeightFormat.MXFP4)).isEqualTo("marlin");
        assertThat(SEED_LIKE.layoutFor(WeightFormat.FP8_BLOCK)).isEqualTo("triton");
        assertThat(BackendTraits.canonical().padded(problem(scheme("s", WeightFormat.MXFP4, ActivationFormat.NONE), 33, 17, 2, 1)).padded())
                .isFalse();
        assertThat(BackendRegistry.EMULATION_TRAITS.activationsFor(WeightFormat.NVFP4)).containsExactly(ActivationKey.BF16,
                ActivationKey.FP8, ActivationKey.INT8, ActivationKey.MXFP4, ActivationKey.MXFP6_E3M2, ActivationKey.MXFP6_E2M3);
        BackendTraits cuda = new FakeBackends.FakeCuda().traits();
        assertThat(cuda.activationsFor(WeightFormat.MXFP4)).containsExactly(ActivationKey.BF16, ActivationKey.MXFP8, ActivationKey.FP8);
        assertThat(cuda.activationsFor(WeightFormat.BF16)).containsExactly(ActivationKey.BF16);
        assertThat(cuda.variantFor(WeightFormat.MXFP4, ActivationKey.MXFP8).minComputeCapability()).isEqualTo(100);
        assertThat(cuda.variantFor(WeightFormat.NVFP4, ActivationKey.MXFP8)).isNull();
    }

    @Test
    void priorityPutsUnlistedBackendsAfterAndEmulationLast() {
        BackendPriority p = BackendPriority.standard();
        var s = scheme("s", WeightFormat.BF16, ActivationFormat.NONE);
        assertThat(p.order(s, List.of("emulation", "cpu", "cuda"))).containsExactly("cuda", "cpu", "emulation");
        assertThat(p.order(s, List.of("emulation", "npu", "cpu"))).containsExactly("cpu", "npu", "emulation");
        assertThat(p.with(WeightFormat.BF16, List.of("emulation", "cpu")).order(s, List.of("cuda", "cpu", "emulation")))
                .containsExactly("cpu", "cuda", "emulation");
    }

    @Test
    void activationKeysOfCheckpointFormats() {
        assertThat(ActivationKey.of(ActivationFormat.NONE)).isEqualTo(ActivationKey.BF16);
        assertThat(ActivationKey.of(ActivationFormat.FP8_STATIC)).isEqualTo(ActivationKey.FP8);
        assertThat(ActivationKey.of(ActivationFormat.FP8_GROUP128)).isEqualTo(ActivationKey.FP8);
        assertThat(ActivationKey.of(ActivationFormat.INT8_TOKEN)).isEqualTo(ActivationKey.INT8);
        assertThat(ActivationKey.of(ActivationFormat.NVFP4)).isEqualTo(ActivationKey.NVFP4);
        assertThat(ActivationKey.MXFP8.dynamicFormat()).isEmpty();
        assertThat(ActivationKey.NVFP4.dynamicFormat()).isEmpty();
        assertThat(ActivationKey.INT8.dynamicFormat()).contains(ActivationFormat.INT8_TOKEN);
        assertThat(ActivationKey.parse(" MXFP6-E3M2 ", "x")).isEqualTo(ActivationKey.MXFP6_E3M2);
    }
}

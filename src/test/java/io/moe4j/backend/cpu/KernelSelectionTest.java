package io.moe4j.backend.cpu;

import io.moe4j.MoeException;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.activation.Activation;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Choosing the kernels, and what the backend says about it: never a silent fallback. */
class KernelSelectionTest {
    static final MoeProblem MXFP4 = new MoeProblem(QuantScheme.unquantized(WeightFormat.MXFP4), 2880, 2880, 32, 4,
            Activation.SWIGLU_OAI, false);

    @AfterEach
    void clearProperty() {
        System.clearProperty(KernelSelection.PROPERTY);
    }

    @Test
    void scalarWhenForced() {
        System.setProperty(KernelSelection.PROPERTY, "true");
        assertThat(KernelSelection.select().name()).isEqualTo("scalar");
        assertThat(new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 256)).reason())
                .isEqualTo("scalar fused dequant-GEMV for MXFP4 in plain Java: -Dmoe4j.cpu.scalar=true");
    }

    @Test
    void vectorWhenAvailableUnlessForcedOtherwise() {
        boolean available = KernelsUnderTest.names().contains("vector");
        assertThat(KernelSelection.select().name()).isEqualTo(available ? "vector" : "scalar");
        System.setProperty(KernelSelection.PROPERTY, "false");
        if (available) {
            assertThat(KernelSelection.select().name()).isEqualTo("vector");
        } else {
            assertThatThrownBy(KernelSelection::select).isInstanceOf(MoeException.class)
                    .hasMessageStartingWith("-Dmoe4j.cpu.scalar=false forces the Vector API kernels, but");
        }
    }

    @Test
    void theKernelsRunAtTheWidthTheyChoose() {
        assertThat(VectorWidth.choose(null, 512)).isEqualTo(512);
        assertThat(VectorWidth.choose(" ", 256)).isEqualTo(256);
        assertThat(VectorWidth.choose(null, 1024)).isEqualTo(512);
        assertThat(VectorWidth.choose("256", 512)).isEqualTo(256);
        assertThat(VectorWidth.choose("512", 256)).isEqualTo(512);
        assertThatThrownBy(() -> VectorWidth.choose("384", 512)).isInstanceOf(MoeException.class)
                .hasMessage("-Dmoe4j.cpu.vectorBits=384: expected 256 or 512");
        assertThat(PanelMatrix.LANES).isEqualTo(VectorWidth.BITS / 32);
        if (KernelsUnderTest.names().contains("vector")) {
            assertThat(VectorShapes.F.vectorBitSize()).isEqualTo(VectorWidth.BITS);
            assertThat(VectorShapes.I.length()).isEqualTo(PanelMatrix.LANES);
            assertThat(VectorShapes.B.length()).isEqualTo(PanelMatrix.LANES);
        }
    }

    @Test
    void aBadPropertyValueIsAnError() {
        System.setProperty(KernelSelection.PROPERTY, "yes");
        assertThatThrownBy(KernelSelection::select).isInstanceOf(MoeException.class)
                .hasMessage("-Dmoe4j.cpu.scalar=yes: expected true or false");
    }

    @Test
    void supportNamesThePathAndTheVectorWidth() {
        String width = System.clearProperty(VectorWidth.PROPERTY);
        try {
            Support vector = new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 256));
            assertThat(vector.supported()).isTrue();
            assertThat(vector.reason())
                    .isEqualTo("vectorized fused dequant-GEMV for MXFP4 on 256-bit vectors (Java Vector API)");
            // The width that runs: AVX-512's 512 bits, unless the property forces the 256-bit kernels.
            assertThat(new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 512)).reason())
                    .isEqualTo("vectorized fused dequant-GEMV for MXFP4 on 512-bit vectors (Java Vector API)");
            System.setProperty(VectorWidth.PROPERTY, "256");
            assertThat(new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 512)).reason()).isEqualTo(
                    "vectorized fused dequant-GEMV for MXFP4 on 256-bit vectors (Java Vector API, -Dmoe4j.cpu.vectorBits=256)");
        } finally {
            if (width == null) {
                System.clearProperty(VectorWidth.PROPERTY);
            } else {
                System.setProperty(VectorWidth.PROPERTY, width);
            }
        }

        Support narrow = new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 128));
        assertThat(narrow.supported()).isTrue();
        assertThat(narrow.reason()).startsWith("scalar fused dequant-GEMV for MXFP4 in plain Java: the preferred vector "
                + "species is 128 bits");

        Support none = new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 0));
        assertThat(none.reason()).startsWith("scalar fused dequant-GEMV for MXFP4 in plain Java:");
    }

    @Test
    void forcingVectorsOnANarrowPlatformIsUnsupported() {
        System.setProperty(KernelSelection.PROPERTY, "false");
        Support s = new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 128));
        assertThat(s.supported()).isFalse();
        assertThat(s.reason()).startsWith("-Dmoe4j.cpu.scalar=false forces the Vector API kernels, but the preferred "
                + "vector species is 128 bits");
    }
}

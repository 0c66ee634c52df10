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
    void aBadPropertyValueIsAnError() {
        System.setProperty(KernelSelection.PROPERTY, "yes");
        assertThatThrownBy(KernelSelection::select).isInstanceOf(MoeException.class)
                .hasMessage("-Dmoe4j.cpu.scalar=yes: expected true or false");
    }

    @Test
    void supportNamesThePathAndTheVectorWidth() {
        Support vector = new CpuBackend().support(MXFP4, Platform.cpuOnly(2, 256));
        assertThat(vector.supported()).isTrue();
        assertThat(vector.reason()).isEqualTo("vectorized fused dequant-GEMV for MXFP4 on 256-bit vectors (Java Vector API)");

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

package io.moe4j.activation;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

class ActivationTest {
    /** erf by composite Simpson integration of 2/√π·e^(−t²): slow, independent of the rational approximations. */
    private static double erfByIntegration(double x) {
        int n = 20_000;
        double h = x / n;
        double sum = 1 + Math.exp(-x * x);
        for (int i = 1; i < n; i++) {
            double t = i * h;
            sum += (i % 2 == 1 ? 4 : 2) * Math.exp(-t * t);
        }
        return 2 / Math.sqrt(Math.PI) * sum * h / 3;
    }

    @Test
    void erfMatchesIntegrationOnEveryBranch() {
        for (double x = -6; x <= 6; x += 0.0625) {
            assertThat(Erf.erf(x)).as("erf(%s)", x).isCloseTo(erfByIntegration(x), within(1e-13));
        }
    }

    @Test
    void geluIsHalfXTimesOnePlusErf() {
        for (double x : new double[] {-3, -0.7, 0, 0.6, 1.3, 4.5}) {
            double want = 0.5 * x * (1 + erfByIntegration(x / Math.sqrt(2)));
            assertThat(Activation.GELU.plain(x)).isCloseTo(want, within(1e-12));
            assertThat(Activation.GELU_AND_MUL.gated(x, 2.0, 0)).isCloseTo(2 * want, within(1e-12));
        }
    }

    @Test
    void swigluOaiClampsGateAboveAndUpBothWays() {
        double limit = 7;
        double g = 9;
        double u = -8;
        double gc = 7;
        double want = gc / (1 + Math.exp(-Activation.OAI_ALPHA * gc)) * (-7 + 1);
        assertThat(Activation.SWIGLU_OAI.gated(g, u, limit)).isCloseTo(want, within(1e-12));
        // A negative gate is not clamped from below.
        double g2 = -9;
        assertThat(Activation.SWIGLU_OAI.gated(g2, 0, limit))
                .isCloseTo(g2 / (1 + Math.exp(-Activation.OAI_ALPHA * g2)), within(1e-12));
    }

    @Test
    void plainAndGatedKindsAgree() {
        double x = 0.8;
        assertThat(Activation.SILU_AND_MUL.gated(x, 1, 0)).isEqualTo(Activation.SILU.plain(x));
        assertThat(Activation.RELU2_AND_MUL.gated(-x, 1, 0)).isZero();
        assertThat(Activation.GELU_TANH.plain(x)).isCloseTo(Activation.GELU.plain(x), within(1e-3));
    }
}

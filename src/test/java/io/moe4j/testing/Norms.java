package io.moe4j.testing;

/** Error measures the tests share. */
public final class Norms {
    private Norms() {
    }

    /**
     * ||got - want|| / ||want|| in float64, the measure the conformance cases set their tolerances in; 0 for empty
     * arrays. Arrays of different lengths are a test failure.
     */
    public static double relL2(float[] got, float[] want) {
        if (got.length != want.length) {
            throw new AssertionError("lengths differ: " + got.length + " vs " + want.length);
        }
        double num = 0;
        double den = 0;
        for (int i = 0; i < want.length; i++) {
            double d = (double) got[i] - want[i];
            num += d * d;
            den += (double) want[i] * want[i];
        }
        return Math.sqrt(num / Math.max(den, Double.MIN_NORMAL));
    }
}

package io.moe4j.backend.cpu;

/**
 * A worker's buffers for the kernels, reused across calls: two decoded panels, the decoded scales and zero points
 * of a panel's segments, per-token row sums, and a panel's codes decoded to 16-bit integers (the int8 kernels). Kernels write their intermediate results here instead of passing vectors between
 * methods, which the JIT could otherwise box when it does not inline the call.
 */
final class Scratch {
    float[] panel = new float[0];
    float[] panel2 = new float[0];
    float[] scales = new float[0];
    float[] zeros = new float[0];
    float[] sums = new float[0];
    short[] codes16 = new short[0];

    /** A buffer for {@code words} words of codes decoded into {@code perWord} 16-bit lanes each. */
    short[] codes16(int words, int perWord) {
        if (codes16.length < words * perWord) {
            codes16 = new short[words * perWord];
        }
        return codes16;
    }

    /** A buffer for the LANES row sums of each of n tokens. */
    float[] sums(int n) {
        if (sums.length < n * PanelMatrix.LANES) {
            sums = new float[n * PanelMatrix.LANES];
        }
        return sums;
    }

    /** Buffers large enough for any panel of m. */
    void fit(PanelMatrix m) {
        int lanes = PanelMatrix.LANES;
        int panelFloats = m.wordsPerPanel() * m.codec().slots() * lanes;
        if (panel.length < panelFloats) {
            panel = new float[panelFloats];
            panel2 = new float[panelFloats];
        }
        int segFloats = m.groups() * lanes;
        if (scales.length < segFloats) {
            scales = new float[segFloats];
            zeros = new float[segFloats];
        }
    }
}

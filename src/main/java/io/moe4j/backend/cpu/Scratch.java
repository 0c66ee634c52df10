package io.moe4j.backend.cpu;

/**
 * A worker's buffers for the kernels, reused across calls: two decoded panels, the decoded scales and zero points
 * of a panel's segments, per-token row sums, and a panel's codes decoded to 16-bit integers (the int8 kernels). Kernels write their intermediate results here instead of passing vectors between
 * methods, which the JIT could otherwise box when it does not inline the call.
 *
 * <p>Every buffer is allocated {@link #PAD} elements longer than asked and used from its start, so that the parts
 * two workers write are never on one cache line: the kernels store a panel's sums, scales and zero points here once
 * a panel, and with the workers' buffers allocated one after another (a few dozen bytes apart for one scale a row),
 * two threads took 2048 rows of 256 INT8 columns no faster than one ({@code ThreadSplitBench W8A16 2048 256 256} on
 * the Zen 5 VM: 122 against 117 µs, best of 2,000 calls; padded, 69-78 against 114-118), while rows of 2048 columns
 * ran 1.6x faster on two (padded: 1.9x).
 */
final class Scratch {
    /** Spare elements after each buffer: 128 bytes of floats, two cache lines (adjacent-line prefetch pairs them). */
    static final int PAD = 32;

    float[] panel = new float[0];
    float[] panel2 = new float[0];
    float[] scales = new float[0];
    float[] zeros = new float[0];
    float[] sums = new float[0];
    short[] codes16 = new short[0];

    /** A buffer for {@code words} words of codes decoded into {@code perWord} 16-bit lanes each. */
    short[] codes16(int words, int perWord) {
        if (codes16.length < words * perWord) {
            codes16 = new short[words * perWord + 2 * PAD];
        }
        return codes16;
    }

    /** A buffer for the LANES row sums of each of n tokens. */
    float[] sums(int n) {
        if (sums.length < n * PanelMatrix.LANES) {
            sums = new float[n * PanelMatrix.LANES + PAD];
        }
        return sums;
    }

    /** Buffers large enough for any panel of m. */
    void fit(PanelMatrix m) {
        int lanes = PanelMatrix.LANES;
        int panelFloats = m.wordsPerPanel() * m.codec().slots() * lanes;
        if (panel.length < panelFloats) {
            panel = new float[panelFloats + PAD];
            panel2 = new float[panelFloats + PAD];
        }
        int segFloats = m.groups() * lanes;
        if (scales.length < segFloats) {
            scales = new float[segFloats + PAD];
            zeros = new float[segFloats + PAD];
        }
    }
}

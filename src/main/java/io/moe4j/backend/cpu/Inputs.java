package io.moe4j.backend.cpu;

/**
 * A batch of {@code n} input vectors gathered into an expert's packed column order ({@link ColumnPlan}): x[t·padded
 * + i] is the input at packed column i of token t, 0 on padding.
 */
class Inputs {
    final int n;
    final int padded;
    final float[] x;

    Inputs(int n, int padded, float[] x) {
        this.n = n;
        this.padded = padded;
        this.x = x;
    }

    static Inputs gather(PanelMatrix m, int expert, float[] x, int xOff, int n) {
        ColumnPlan plan = m.plan(expert);
        int padded = plan.paddedColumns();
        float[] g = new float[n * padded];
        for (int t = 0; t < n; t++) {
            plan.gather(x, xOff + t * m.cols(), g, t * padded);
        }
        return new Inputs(n, padded, g);
    }
}

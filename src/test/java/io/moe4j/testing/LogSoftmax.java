package io.moe4j.testing;

/** The log softmax of a row of logits in double: what tests hold log-probabilities to. */
public final class LogSoftmax {
    private LogSoftmax() {
    }

    public static double[] of(float[] logits) {
        double max = Double.NEGATIVE_INFINITY;
        for (float l : logits) {
            max = Math.max(max, l);
        }
        double sum = 0;
        for (float l : logits) {
            sum += Math.exp(l - max);
        }
        double[] row = new double[logits.length];
        for (int i = 0; i < row.length; i++) {
            row[i] = logits[i] - max - Math.log(sum);
        }
        return row;
    }
}

package io.moe4j.serve;

import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.DoubleAdder;

/** A Prometheus histogram: cumulative counts under fixed upper bounds, their sum and count. Thread-safe. */
final class Histogram {
    private final double[] bounds;
    private final AtomicLongArray counts;
    private final DoubleAdder sum = new DoubleAdder();

    Histogram(double... bounds) {
        this.bounds = bounds.clone();
        this.counts = new AtomicLongArray(bounds.length + 1);
    }

    void observe(double value) {
        int i = 0;
        while (i < bounds.length && value > bounds[i]) {
            i++;
        }
        counts.incrementAndGet(i);
        sum.add(value);
    }

    long count() {
        long n = 0;
        for (int i = 0; i < counts.length(); i++) {
            n += counts.get(i);
        }
        return n;
    }

    void write(StringBuilder out, String name, String help) {
        out.append("# HELP ").append(name).append(' ').append(help).append('\n');
        out.append("# TYPE ").append(name).append(" histogram\n");
        long cumulative = 0;
        for (int i = 0; i < bounds.length; i++) {
            cumulative += counts.get(i);
            out.append(name).append("_bucket{le=\"").append(format(bounds[i])).append("\"} ").append(cumulative)
                    .append('\n');
        }
        cumulative += counts.get(bounds.length);
        out.append(name).append("_bucket{le=\"+Inf\"} ").append(cumulative).append('\n');
        out.append(name).append("_sum ").append(format(sum.sum())).append('\n');
        out.append(name).append("_count ").append(cumulative).append('\n');
    }

    static String format(double v) {
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v) : Double.toString(v);
    }
}

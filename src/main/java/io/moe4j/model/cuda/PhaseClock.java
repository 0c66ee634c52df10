package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.CudaGraph;

/**
 * A bench's breakdown of a device pass: host nanoseconds between marks, summed per phase, the stream drained at
 * each mark so a phase holds its own device work. Off unless turned on (a pass then runs eagerly, not replayed).
 */
final class PhaseClock {
    private final ModelOps ops;
    private final int phases;
    private long[] nanos;
    private long last;

    PhaseClock(ModelOps ops, int phases) {
        this.ops = ops;
        this.phases = phases;
    }

    /** Turns the clock on (cleared) or off. */
    void enable(boolean on) {
        nanos = on ? new long[phases] : null;
    }

    boolean on() {
        return nanos != null;
    }

    /** Nanoseconds per phase since the clock was turned on, or null when it is off. */
    long[] totals() {
        return nanos == null ? null : nanos.clone();
    }

    /** Ends {@code phase} here (a negative phase only starts the clock's next span). */
    void mark(int phase) {
        if (nanos == null) {
            return;
        }
        ops.synchronize();
        long now = System.nanoTime();
        if (phase >= 0) {
            nanos[phase] += now - last;
        }
        last = now;
    }

    /** Device time of {@code graph} replayed back to back {@code times} times, µs a replay; NaN for no graph. */
    static double replayMicros(ModelOps ops, CudaGraph graph, int times) {
        if (graph == null) {
            return Double.NaN;
        }
        ops.synchronize();
        long a = System.nanoTime();
        for (int i = 0; i < times; i++) {
            graph.launch(ops.stream());
        }
        ops.synchronize();
        return (System.nanoTime() - a) / 1e3 / times;
    }
}

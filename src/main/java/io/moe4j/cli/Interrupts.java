package io.moe4j.cli;

/**
 * Ctrl-C as a request to stop the current answer rather than the program. Uses the JDK's signal hook
 * (jdk.unsupported's sun.misc.Signal); where it is not available the default behaviour (exit) stays.
 */
final class Interrupts {
    private Interrupts() {
    }

    /** Runs {@code onInterrupt} on SIGINT until the returned action restores the previous handler. */
    @SuppressWarnings("removal")
    static Runnable onCtrlC(Runnable onInterrupt) {
        try {
            sun.misc.Signal sigint = new sun.misc.Signal("INT");
            sun.misc.SignalHandler previous = sun.misc.Signal.handle(sigint, s -> onInterrupt.run());
            return () -> sun.misc.Signal.handle(sigint, previous);
        } catch (IllegalArgumentException | UnsupportedOperationException | LinkageError e) {
            return () -> { };
        }
    }
}

package io.moe4j.cli;

import me.tongfei.progressbar.ConsoleProgressBarConsumer;
import me.tongfei.progressbar.DelegatingProgressBarConsumer;
import me.tongfei.progressbar.ProgressBar;
import me.tongfei.progressbar.ProgressBarBuilder;
import me.tongfei.progressbar.ProgressBarStyle;

/**
 * Progress bars on stderr: redrawn in place on a terminal; where the output goes to a pipe or a log, a line every
 * {@value #LOG_INTERVAL_MS} ms and one at the end, instead of a carriage return five times a second.
 */
final class Progress {
    static final int LOG_INTERVAL_MS = 10_000;

    private Progress() {
    }

    /** Whether the command runs on a terminal (JDK 22+ has a console for redirected streams too: isTerminal tells). */
    static boolean onTerminal() {
        return System.console() != null && System.console().isTerminal();
    }

    static ProgressBar bar(String task, long max) {
        return builder(task, 200).setInitialMax(max).build();
    }

    /** A bar's settings but its size: on a terminal redrawn every {@code terminalIntervalMs}. */
    static ProgressBarBuilder builder(String task, int terminalIntervalMs) {
        ProgressBarBuilder b = new ProgressBarBuilder().setTaskName(task).setStyle(ProgressBarStyle.ASCII)
                .continuousUpdate();
        return onTerminal()
                ? b.setUpdateIntervalMillis(terminalIntervalMs).setConsumer(new ConsoleProgressBarConsumer(System.err))
                : b.setUpdateIntervalMillis(LOG_INTERVAL_MS).setConsumer(new DelegatingProgressBarConsumer(
                        System.err::println));
    }
}

package io.moe4j.backend.cpu;

import java.util.Arrays;

/**
 * What a parallel section costs beyond its work, with one pool shared by every layer against one pool per layer (as
 * each MoE layer and the linears once had). A "token" runs {@code sections} sections in a row, section s on pool
 * s mod P; each section has {@code threads × 4} tasks of a fixed spin of work. Prints the median µs a section and
 * the overhead over the same work run inline. Not run by the tests. Run with
 * <pre>
 *   mvn -o -q test-compile
 *   java -cp target/test-classes:target/classes io.moe4j.backend.cpu.WorkerPoolBench [threads] [pools...]
 * </pre>
 * e.g. {@code 16 1 25} on a 16-core machine (gpt-oss-20b: 24 MoE layers and the linears' pool).
 */
public final class WorkerPoolBench {
    private static final int SECTIONS = 96;
    private static volatile long sink;

    private WorkerPoolBench() {
    }

    public static void main(String[] args) {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
        int[] poolCounts = args.length > 1 ? Arrays.stream(args, 1, args.length).mapToInt(Integer::parseInt).toArray()
                : new int[]{1, 25};
        int tasks = threads * 4;
        long workNanos = 5_000; // per task: a section of 4·threads tasks is ~20 µs a worker
        double inline = perSection(null, tasks, workNanos, threads);
        System.out.printf("threads %d, %d tasks of %d ns a section: work alone %.1f µs a section (inline / threads)%n",
                threads, tasks, workNanos, inline);
        for (int round = 0; round < 2; round++) {
            for (int p : poolCounts) {
                WorkerPool[] pools = new WorkerPool[p];
                for (int i = 0; i < p; i++) {
                    pools[i] = new WorkerPool(threads);
                }
                try {
                    double us = perSection(pools, tasks, workNanos, threads);
                    System.out.printf("  %3d pool(s): %7.1f µs a section, overhead %6.1f µs%n", p, us, us - inline);
                } finally {
                    for (WorkerPool pool : pools) {
                        pool.close();
                    }
                }
            }
        }
    }

    /** Median µs a section over tokens of SECTIONS sections; pools null runs the work inline divided by threads. */
    private static double perSection(WorkerPool[] pools, int tasks, long workNanos, int threads) {
        int tokens = 60;
        double[] us = new double[tokens];
        for (int warm = 0; warm < 2; warm++) {
            for (int t = 0; t < tokens; t++) {
                long t0 = System.nanoTime();
                for (int s = 0; s < SECTIONS; s++) {
                    if (pools == null) {
                        for (int k = 0; k < tasks; k++) {
                            spin(workNanos);
                        }
                    } else {
                        pools[s % pools.length].run(tasks, (task, worker) -> spin(workNanos));
                    }
                }
                us[t] = (System.nanoTime() - t0) / 1e3 / SECTIONS / (pools == null ? threads : 1);
            }
        }
        Arrays.sort(us);
        return us[tokens / 2];
    }

    private static void spin(long nanos) {
        long end = System.nanoTime() + nanos;
        long x = 0;
        while (System.nanoTime() < end) {
            x++;
        }
        sink += x;
    }
}

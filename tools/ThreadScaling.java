// Timing-only probe (not part of the engine): do this machine's cores add compute? Each thread runs the same
// register-only FMA loop (8 independent accumulators, 256-bit vectors, nothing read from memory in the loop) and the
// total rate is printed for 1 and N threads, interleaved. On dedicated cores N threads give N times one thread's rate.
// Run: $JAVA_HOME/bin/java --add-modules jdk.incubator.vector tools/ThreadScaling.java [threads] [rounds]
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

public class ThreadScaling {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_256;
    static final long ITERATIONS = 200_000_000L;

    /** 8 FMA chains of 8 lanes: 64 multiply-adds per iteration. */
    static float spin(float seed, long iterations) {
        FloatVector m = FloatVector.broadcast(S, 0.9999f);
        FloatVector a0 = FloatVector.broadcast(S, seed), a1 = a0.add(1), a2 = a0.add(2), a3 = a0.add(3);
        FloatVector a4 = a0.add(4), a5 = a0.add(5), a6 = a0.add(6), a7 = a0.add(7);
        for (long i = 0; i < iterations / 8; i++) {
            a0 = a0.fma(m, m); a1 = a1.fma(m, m); a2 = a2.fma(m, m); a3 = a3.fma(m, m);
            a4 = a4.fma(m, m); a5 = a5.fma(m, m); a6 = a6.fma(m, m); a7 = a7.fma(m, m);
        }
        return a0.add(a1).add(a2).add(a3).add(a4).add(a5).add(a6).add(a7).reduceLanes(VectorOperators.ADD);
    }

    static double rate(int threads) throws InterruptedException {
        Thread[] ts = new Thread[threads];
        float[] sink = new float[threads];
        long t0 = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            int id = t;
            ts[t] = new Thread(() -> sink[id] = spin(id, ITERATIONS));
            ts[t].start();
        }
        for (Thread t : ts) t.join();
        double seconds = (System.nanoTime() - t0) / 1e9;
        return threads * (ITERATIONS * 8.0) / seconds / 1e9; // G multiply-adds per second, all threads
    }

    public static void main(String[] args) throws InterruptedException {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : Runtime.getRuntime().availableProcessors();
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        float sink = 0;
        for (int w = 0; w < 50; w++) sink += spin(w, 4_000_000L); // warm-up: a compiled loop, not an OSR one
        if (sink == 42) System.out.println();
        for (int r = 0; r < rounds; r++) {
            double one = rate(1), many = rate(threads);
            System.out.printf("round %d: 1 thread %.1f GFMA/s, %d threads %.1f GFMA/s, scaling %.2fx%n",
                    r + 1, one, threads, many, many / one);
        }
    }
}

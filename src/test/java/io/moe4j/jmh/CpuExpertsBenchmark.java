package io.moe4j.jmh;

import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.cpu.CpuBackend;
import io.moe4j.bench.SyntheticScheme;
import io.moe4j.bench.SyntheticWeights;
import io.moe4j.activation.Activation;
import io.moe4j.activation.GateLayout;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.routing.Routing;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.lang.foreign.Arena;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;

/**
 * The cpu kernels on one gpt-oss-sized expert (w13 5760 × 2880, w2 2880 × 2880): every token routed to it, so a
 * call is its two GEMMs and the activation, on weights that stay in the last-level cache for small schemes. Not run
 * in CI. Run with
 * <pre>
 *   mvn -o -q test-compile dependency:build-classpath -Dmdep.outputFile=cp.txt -Dmdep.includeScope=test
 *   java --add-modules jdk.incubator.vector -cp target/test-classes:target/classes:$(cat cp.txt) \
 *       org.openjdk.jmh.Main CpuExpertsBenchmark
 * </pre>
 * The {@code moe bench} command measures whole layers against memory bandwidth; this isolates the kernels.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"--add-modules", "jdk.incubator.vector"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class CpuExpertsBenchmark {
    @Param({"mxfp4", "nvfp4", "w4a16", "fp8-block", "bf16"})
    String scheme;

    @Param({"1", "16", "256"})
    int tokens;

    @Param({"1"})
    int threads;

    private Arena arena;
    private Experts experts;
    private float[] x;
    private float[] out;
    private Routing routing;

    @Setup(Level.Trial)
    public void setUp() {
        arena = Arena.ofShared();
        SyntheticWeights.Shape shape = new SyntheticWeights.Shape(1, 2880, 2880, GateLayout.INTERLEAVED,
                Activation.SWIGLU_OAI, true);
        ExpertWeights w = SyntheticWeights.generate(SyntheticScheme.fromCliName(scheme), shape, 1, arena, b -> {
        });
        experts = new CpuBackend().prepare(w, new ExecutionOptions(threads));
        x = SyntheticWeights.inputs(tokens, shape.hidden(), 2);
        out = new float[x.length];
        float[] weights = new float[tokens];
        Arrays.fill(weights, 1f);
        routing = new Routing(tokens, 1, new int[tokens], weights, false);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        experts.close();
        arena.close();
    }

    @Benchmark
    public float[] forward() {
        experts.forward(x, tokens, routing, out);
        return out;
    }
}

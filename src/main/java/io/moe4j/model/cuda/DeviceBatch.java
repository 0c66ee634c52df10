package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.DeviceRoutes;
import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.StepOutput;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Several sequences of one {@link DeviceModel} stepped in one forward (continuous batching): their new tokens are
 * the rows of one pass, so every linear, router and expert stage runs once over all rows (the weights read once for
 * the batch), while RoPE, the cache writes and attention take each row's own position and its sequence's cache from
 * tables on the device ({@code model_rope_store_rows}, {@code model_attend_rows}). The experts are routed on the
 * device, so a step has no host round trip: the rows' ids, positions, cache addresses and each sequence's last row
 * go in as one copy, each sequence's last logits come out. A step of one token per sequence replays from a CUDA graph
 * recorded for its batch size (the tables are data, so the same graph serves any sequences of that size).
 *
 * <p>Not thread-safe: the model steps one batch at a time.
 */
final class DeviceBatch implements AutoCloseable {
    private static final int FLOAT = 4;

    private final DeviceModel model;
    private final ModelOps ops;
    private final DeviceRoutes routes;
    private Scratch scratch;
    /** Recorded decode steps by batch size, and the routes' generation they name. */
    private final Map<Integer, CudaGraph> graphs = new HashMap<>();
    private final Map<Integer, Boolean> seen = new HashMap<>();
    private long graphGeneration = -1;
    /** With profiling on, host time of each of {@link #PHASES}. */
    private final PhaseClock clock;

    /** The phases {@link #profile} reports. */
    static final String[] PHASES = {"inputs", "attention stretches", "routing and experts", "head", "logits to host"};

    /**
     * Activations for up to {@code rows} token rows. inputs: ids int32 [rows], then each sequence's last row int32
     * [rows], then positions int64 [rows], then cache addresses int64 [layers][rows]: offsets fixed by the capacity,
     * so a recorded step names the same addresses whatever the batch.
     */
    private record Scratch(int rows, DeviceBuffer inputs, DeviceBuffer h, DeviceBuffer xn, DeviceBuffer qkv,
                           DeviceBuffer attended, DeviceBuffer moeOut, DeviceBuffer routerLogits, DeviceBuffer last,
                           DeviceBuffer logits, DeviceBuffer chosen, DeviceBuffer partials) implements AutoCloseable {
        long ids() {
            return inputs.pointer();
        }

        long lastRows() {
            return inputs.pointer() + 4L * rows;
        }

        long positions() {
            return inputs.pointer() + 8L * rows;
        }

        long caches(int layer) {
            return inputs.pointer() + 16L * rows + 8L * rows * layer;
        }

        @Override
        public void close() {
            for (DeviceBuffer b : new DeviceBuffer[] {inputs, h, xn, qkv, attended, moeOut, routerLogits, last, logits,
                    chosen, partials}) {
                b.close();
            }
        }
    }

    DeviceBatch(DeviceModel model) {
        this.model = model;
        this.ops = ModelOps.open();
        this.clock = new PhaseClock(ops, PHASES.length);
        this.routes = ops.newRoutes();
    }

    /** Whether a batch of {@code rows} token rows routes on the device in one pass. */
    static boolean fits(DeviceModel model, int rows) {
        int k = 0;
        for (DeviceModel.Layer l : model.layers()) {
            k = Math.max(k, l.moe().router().spec().topK());
        }
        return model.routesOnDevice() && (long) rows * k <= ModelOps.DEVICE_ROUTED_PAIRS;
    }

    /**
     * One step (the caller checked {@link #fits} and the tokens): each sequence's logits after its last token, or
     * where {@code greedyOnly[i]} its greedy choice, picked on the device (only the other sequences' logits cross to
     * the host).
     */
    StepOutput step(List<DeviceSequence> sequences, List<int[]> tokens, long[] starts, boolean[] greedyOnly) {
        int n = sequences.size();
        int rows = 0;
        for (int[] t : tokens) {
            rows += t.length;
        }
        for (int i = 0; i < n; i++) {
            sequences.get(i).reserveCache((int) (starts[i] + tokens.get(i).length));
        }
        Scratch s = scratch(rows);
        int layers = model.layers().size();
        // one copy of the step's tables: ids, last rows, positions, cache addresses
        long bytes = 16L * s.rows() + 8L * s.rows() * layers;
        MemorySegment in = ops.staging(bytes);
        int row = 0;
        for (int i = 0; i < n; i++) {
            int[] t = tokens.get(i);
            for (int j = 0; j < t.length; j++, row++) {
                in.setAtIndex(ValueLayout.JAVA_INT, row, t[j]);
                in.setAtIndex(ValueLayout.JAVA_LONG, s.rows() + row, starts[i] + j);
                for (int l = 0; l < layers; l++) {
                    in.setAtIndex(ValueLayout.JAVA_LONG, 2L * s.rows() + (long) l * s.rows() + row,
                            sequences.get(i).cachePointer(l));
                }
            }
            in.setAtIndex(ValueLayout.JAVA_INT, s.rows() + i, row - 1);
        }
        clock.mark(-1);
        ops.send(s.inputs(), bytes);
        clock.mark(0);
        int total = rows;
        if (rows == n && !clock.on()) {
            replay(n, () -> pass(s, total, n));
        } else {
            pass(s, total, n);
        }
        clock.mark(3);
        int vocab = model.config().vocab();
        int[] greedy = new int[n];
        boolean[] wanted = new boolean[n];
        boolean anyGreedy = false;
        for (int i = 0; i < n; i++) {
            wanted[i] = !greedyOnly[i];
            anyGreedy |= greedyOnly[i];
        }
        if (anyGreedy) {
            int[] ids = ops.argmaxRows(s.logits().pointer(), n, vocab, s.chosen());
            for (int i = 0; i < n; i++) {
                greedy[i] = greedyOnly[i] ? ids[i] : -1;
            }
        } else {
            java.util.Arrays.fill(greedy, -1);
        }
        float[][] logits = ops.readRows(s.logits(), vocab, wanted);
        clock.mark(4);
        return new StepOutput(logits, greedy);
    }

    /** Replays the recorded step of this batch size, recording it on its second run (kernels loaded, buffers grown). */
    private void replay(int size, Runnable pass) {
        if (graphGeneration != routes.generation()) {
            dropGraphs();
        }
        CudaGraph g = graphs.get(size);
        if (g == null && seen.getOrDefault(size, false)) {
            long generation = routes.generation();
            g = ops.capture(pass);
            graphs.put(size, g);
            graphGeneration = generation;
        }
        if (g != null) {
            g.launch(ops.stream());
        } else {
            pass.run();
            seen.put(size, true);
        }
    }

    private void pass(Scratch s, int rows, int sequences) {
        int hidden = model.config().hidden();
        float eps = model.config().normEps();
        long h = s.h().pointer();
        long xn = s.xn().pointer();
        long qkv = s.qkv().pointer();
        ops.embed(model.embedding().pointer(), s.ids(), h, rows, hidden);
        for (int l = 0; l < model.layers().size(); l++) {
            DeviceModel.Layer layer = model.layers().get(l);
            GqaSpec g = layer.spec();
            int d = g.headDim();
            int qWidth = g.heads() * d;
            int qkvWidth = (g.heads() + 2 * g.kvHeads()) * d;
            ops.rmsNorm(h, l == 0 ? 0L : s.moeOut().pointer(), layer.inputNorm().pointer(), xn, rows, hidden, eps);
            ops.linearBf16(xn, layer.qkv().pointer(), pointer(layer.qkvBias()), qkv, rows, hidden, qkvWidth, false,
                    s.partials().pointer(), s.partials().byteSize());
            DeviceModel.RopeTables rope = layer.rope();
            ops.ropeAndStoreRows(qkv, rows, g.heads(), g.kvHeads(), d, rope.cos().pointer(), rope.sin().pointer(),
                    s.positions(), s.caches(l), rope.half(), rope.interleaved());
            ops.attendRows(qkv, qkvWidth, s.caches(l), pointer(layer.sinks()), s.attended().pointer(), rows,
                    s.positions(), g.heads(), g.kvHeads(), d, layer.window(), g.scale());
            ops.linearBf16(s.attended().pointer(), layer.o().pointer(), pointer(layer.oBias()), h, rows, qWidth, hidden,
                    true, s.partials().pointer(), s.partials().byteSize());
            ops.rmsNorm(h, 0L, layer.postNorm().pointer(), xn, rows, hidden, eps);
            ops.routerLogits(xn, layer.routerWeight().pointer(), pointer(layer.routerBias()),
                    s.routerLogits().pointer(), rows, layer.moe().router().spec().numExperts(), hidden);
            clock.mark(1);
            ops.routeAndRunExperts(layer.moe().experts(), layer.moe().router().spec(), s.routerLogits().pointer(),
                    pointer(layer.routerCorrection()), s.xn(), rows, s.moeOut(), routes);
            clock.mark(2);
        }
        // every row takes the last layer's experts and the final norm; lm_head reads each sequence's last row
        ops.rmsNorm(h, s.moeOut().pointer(), model.finalNorm().pointer(), xn, rows, hidden, eps);
        ops.gatherRows(xn, s.lastRows(), s.last().pointer(), sequences, hidden);
        ops.linearBf16(s.last().pointer(), model.lmHead().pointer(), 0, s.logits().pointer(), sequences, hidden,
                model.config().vocab(), false);
    }

    /** Turns the phase profile on (a bench's breakdown: steps then run eagerly, each phase waited for) and clears it. */
    void profile(boolean on) {
        clock.enable(on);
    }

    /** Host nanoseconds spent in each of {@link #PHASES} since profiling was turned on, or null when it is off. */
    long[] profile() {
        return clock.totals();
    }

    /** Device time of the recorded step of {@code size} sequences replayed {@code times} times, µs a replay; NaN if none. */
    double replayMicros(int size, int times) {
        return PhaseClock.replayMicros(ops, graphs.get(size), times);
    }

    private static long pointer(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    private Scratch scratch(int rows) {
        if (scratch != null && scratch.rows() >= rows) {
            return scratch;
        }
        ops.synchronize();
        dropGraphs();
        int capacity = Math.max(rows, scratch == null ? 8 : 2 * scratch.rows());
        if (scratch != null) {
            scratch.close();
            scratch = null;
        }
        int hidden = model.config().hidden();
        DeviceModel.Widths widest = model.widest();
        int qWidth = widest.q();
        int qkvWidth = widest.qkv();
        int experts = widest.experts();
        long r = capacity;
        int layers = model.layers().size();
        scratch = new Scratch(capacity, ops.allocate(16 * r + 8 * r * layers), ops.allocate(FLOAT * r * hidden),
                ops.allocate(FLOAT * r * hidden), ops.allocate(FLOAT * r * qkvWidth), ops.allocate(FLOAT * r * qWidth),
                ops.allocate(FLOAT * r * hidden), ops.allocate(8 * r * experts), ops.allocate(FLOAT * r * hidden),
                ops.allocate(FLOAT * r * model.config().vocab()), ops.allocate(4 * r),
                ops.allocate(ModelOps.slicePartialsBytes(capacity, Math.max(qkvWidth, hidden))));
        return scratch;
    }

    private void dropGraphs() {
        graphs.values().forEach(CudaGraph::close);
        graphs.clear();
        seen.clear();
        graphGeneration = routes.generation();
    }

    @Override
    public void close() {
        ops.synchronize();
        dropGraphs();
        if (scratch != null) {
            scratch.close();
        }
        routes.close();
        ops.close();
    }
}

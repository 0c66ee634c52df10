package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.DeviceRoutes;
import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.SequenceState;
import io.moe4j.routing.Routing;

/**
 * One sequence through a {@link DeviceModel}: a float32 KV cache per layer on the device ([position][k | v], every
 * position kept, so a sliding layer's attention reads its window and rewinding is always possible) and the
 * activation buffers of a pass, both grown on demand. Between layers the hidden states stay on the device.
 *
 * <p>When every layer routes on the device ({@link DeviceModel#routesOnDevice}) a pass of a few tokens has no host
 * round trip: the experts are chosen from the router logits on the device with the host's rules and their routing plan
 * is built there ({@link ModelOps#routeAndRunExperts}); only the token ids and position go in and the logits come
 * out, and a decode step replays as one CUDA graph. Otherwise (and for long prompts) each MoE layer sends its router
 * logits to the host, where {@link io.moe4j.routing.Router#select} picks the experts, and the plan back; a decode
 * step's launches between those round trips replay from CUDA graphs.
 */
final class DeviceSequence implements SequenceState {
    private static final int FLOAT = 4;

    private final DeviceModel model;
    private final ModelOps ops;
    private final DeviceBuffer[] caches;
    private int cachePositions;
    private Scratch scratch;
    /** The device memory of the layers routed on the device. */
    private final DeviceRoutes routes;
    /** Where the greedy choice of {@link #forwardGreedy} lands on the device (one int). */
    private final DeviceBuffer chosen;
    /** The decode step recorded whole (device routing), the routes' generation it names, and whether one ran. */
    private CudaGraph stepGraph;
    private long stepGeneration;
    private boolean stepSeen;
    /** Per stretch of launches (one per layer, then the head): the recorded decode step, and whether one ran. */
    private final CudaGraph[] graphs;
    private final boolean[] seen;
    private boolean closed;
    /** With profiling on, host time of each of {@link #PHASES}. */
    private final PhaseClock clock;

    /** The phases {@link #profile} reports. */
    static final String[] PHASES = {"inputs", "attention", "router logits to host", "experts", "head", "logits to host",
            "whole pass on the device"};

    /**
     * A pass's activations for up to {@code tokens} tokens. inputs: the first position fed (int64, read by the kernels
     * so that decode steps replay) then the token ids (int32).
     */
    private record Scratch(int tokens, DeviceBuffer inputs, DeviceBuffer h, DeviceBuffer xn, DeviceBuffer qkv,
                           DeviceBuffer attended, DeviceBuffer moeOut, DeviceBuffer routerLogits, DeviceBuffer logits,
                           DeviceBuffer partials) implements AutoCloseable {
        @Override
        public void close() {
            for (DeviceBuffer b : new DeviceBuffer[] {inputs, h, xn, qkv, attended, moeOut, routerLogits, logits,
                    partials}) {
                b.close();
            }
        }
    }

    DeviceSequence(DeviceModel model) {
        this.model = model;
        this.ops = ModelOps.open(); // a stream and landing buffer of its own: sessions of one model may run at once
        this.clock = new PhaseClock(ops, PHASES.length);
        this.caches = new DeviceBuffer[model.layers().size()];
        this.routes = ops.newRoutes();
        this.chosen = ops.allocate(4);
        this.graphs = new CudaGraph[caches.length + 1];
        this.seen = new boolean[caches.length + 1];
    }

    @Override
    public float[] forward(int[] tokens, long start, boolean allLogits) {
        int rows = allLogits ? tokens.length : 1;
        Scratch s = run(tokens, start, rows);
        float[] logits = ops.readFloats(s.logits(), 0, rows * model.config().vocab());
        clock.mark(5);
        return logits;
    }

    /** The greedy choice made on the device: one int comes back instead of the vocabulary's logits. */
    @Override
    public int forwardGreedy(int[] tokens, long start) {
        Scratch s = run(tokens, start, 1);
        int next = ops.argmax(s.logits().pointer(), model.config().vocab(), chosen);
        clock.mark(5);
        return next;
    }

    /** Enqueues a pass whose last {@code rows} rows' logits are left in the scratch's logits buffer. */
    private Scratch run(int[] tokens, long start, int rows) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        int n = tokens.length;
        Scratch s = scratch(n);
        reserveCache((int) (start + n));
        int hidden = model.config().hidden();
        long h = s.h().pointer();
        clock.mark(-1);
        ops.writeInputs(start, tokens, s.inputs());
        clock.mark(0);
        boolean step = n == 1;
        int layers = caches.length;
        if (model.routesOnDevice() && (long) n * maxTopK() <= ModelOps.DEVICE_ROUTED_PAIRS) {
            if (step) {
                replayStep(() -> pass(s, n, rows));
            } else {
                pass(s, n, rows);
            }
            clock.mark(6);
            return s;
        }
        for (int l = 0; l < layers; l++) {
            DeviceModel.Layer layer = model.layers().get(l);
            DeviceBuffer cache = caches[l];
            boolean first = l == 0;
            segment(l, step, () -> {
                if (first) {
                    ops.embed(model.embedding().pointer(), s.inputs().pointer() + 8, h, n, hidden);
                }
                attention(layer, cache, s, n, first ? 0L : s.moeOut().pointer());
            });
            clock.mark(1);
            experts(layer, s, n);
        }
        segment(layers, step, () -> head(s, n, rows));
        clock.mark(4);
        return s;
    }

    /** A whole pass enqueued with no host round trip (every layer routed on the device): ids in, logits of the last rows. */
    private void pass(Scratch s, int n, int rows) {
        int hidden = model.config().hidden();
        ops.embed(model.embedding().pointer(), s.inputs().pointer() + 8, s.h().pointer(), n, hidden);
        for (int l = 0; l < caches.length; l++) {
            DeviceModel.Layer layer = model.layers().get(l);
            attention(layer, caches[l], s, n, l == 0 ? 0L : s.moeOut().pointer());
            ops.routeAndRunExperts(layer.moe().experts(), layer.moe().router().spec(), s.routerLogits().pointer(),
                    pointer(layer.routerCorrection()), s.xn(), n, s.moeOut(), routes);
        }
        head(s, n, rows);
    }

    /** The final norm of the last {@code rows} rows (after the last layer's experts) and lm_head into logits. */
    private void head(Scratch s, int n, int rows) {
        int hidden = model.config().hidden();
        // the rows wanted take the last layer's experts (h is not read again: the next pass embeds anew)
        long at = (long) (n - rows) * hidden * FLOAT;
        ops.rmsNorm(s.h().pointer() + at, s.moeOut().pointer() + at, model.finalNorm().pointer(), s.xn().pointer(), rows,
                hidden, model.config().normEps());
        ops.linearBf16(s.xn().pointer(), model.lmHead().pointer(), 0, s.logits().pointer(), rows, hidden,
                model.config().vocab(), false);
    }

    /**
     * A decode step routed on the device: the same launches every step (shapes, buffers, and the position read from
     * device memory), so from the second step on the whole pass replays as one CUDA graph. The first run compiles and
     * loads every kernel and grows the routes' buffers, which must not happen while a stream records.
     */
    private void replayStep(Runnable pass) {
        if (stepGraph != null && stepGeneration != routes.generation()) {
            stepGraph.close();
            stepGraph = null;
            stepSeen = false;
        }
        if (stepGraph == null && stepSeen) {
            long generation = routes.generation();
            stepGraph = ops.capture(pass);
            stepGeneration = generation;
        }
        if (stepGraph != null) {
            stepGraph.launch(ops.stream());
        } else {
            pass.run();
            stepSeen = true;
        }
    }

    private int maxTopK() {
        int k = 0;
        for (DeviceModel.Layer l : model.layers()) {
            k = Math.max(k, l.moe().router().spec().topK());
        }
        return k;
    }

    /**
     * Runs one stretch of launches between two host round trips. A decode step's stretches are the same every step
     * (shapes, buffers, and the position read from device memory), so from the second step on each replays as one
     * CUDA graph: a launch instead of a dozen.
     */
    private void segment(int i, boolean step, Runnable work) {
        if (!step) {
            work.run();
            return;
        }
        if (graphs[i] == null && seen[i]) {
            graphs[i] = ops.capture(work);
        }
        if (graphs[i] != null) {
            graphs[i].launch(ops.stream());
        } else {
            work.run();
            seen[i] = true;
        }
    }

    /** Forgets the recorded steps (their buffers are about to move). */
    private void dropGraphs() {
        for (int i = 0; i < graphs.length; i++) {
            if (graphs[i] != null) {
                graphs[i].close();
                graphs[i] = null;
            }
            seen[i] = false;
        }
        if (stepGraph != null) {
            stepGraph.close();
            stepGraph = null;
        }
        stepSeen = false;
    }

    /**
     * h += add (the previous layer's experts, unless 0); norm(h) -> q|k|v -> RoPE, k and v into the cache ->
     * attention -> h += o(...); then norm(h) and the router's logits.
     */
    private void attention(DeviceModel.Layer layer, DeviceBuffer cache, Scratch s, int n, long add) {
        GqaSpec g = layer.spec();
        int hidden = model.config().hidden();
        float eps = model.config().normEps();
        int d = g.headDim();
        int qWidth = g.heads() * d;
        int qkvWidth = (g.heads() + 2 * g.kvHeads()) * d;
        long h = s.h().pointer();
        long xn = s.xn().pointer();
        long qkv = s.qkv().pointer();
        long start = s.inputs().pointer();
        ops.rmsNorm(h, add, layer.inputNorm().pointer(), xn, n, hidden, eps);
        ops.linearBf16(xn, layer.qkv().pointer(), pointer(layer.qkvBias()), qkv, n, hidden, qkvWidth, false,
                s.partials().pointer(), s.partials().byteSize());
        DeviceModel.RopeTables rope = layer.rope();
        ops.ropeAndStore(qkv, n, g.heads(), g.kvHeads(), d, rope.cos().pointer(), rope.sin().pointer(), start,
                rope.half(), rope.interleaved(), cache.pointer());
        ops.attend(qkv, qkvWidth, cache.pointer(), pointer(layer.sinks()), s.attended().pointer(), n, start, g.heads(),
                g.kvHeads(), d, layer.window(), g.scale());
        ops.linearBf16(s.attended().pointer(), layer.o().pointer(), pointer(layer.oBias()), h, n, qWidth, hidden, true,
                s.partials().pointer(), s.partials().byteSize());
        ops.rmsNorm(h, 0L, layer.postNorm().pointer(), xn, n, hidden, eps);
        ops.routerLogits(xn, layer.routerWeight().pointer(), pointer(layer.routerBias()), s.routerLogits().pointer(),
                n, layer.moe().router().spec().numExperts(), hidden);
    }

    /** The host's expert selection on the device's router logits, then the experts on norm(h) into moeOut. */
    private void experts(DeviceModel.Layer layer, Scratch s, int n) {
        int experts = layer.moe().router().spec().numExperts();
        double[] logits = ops.readDoubles(s.routerLogits(), n * experts);
        Routing routing = layer.moe().router().select(logits, n);
        clock.mark(2);
        ops.experts(layer.moe().experts(), s.xn(), n, routing, s.moeOut());
        clock.mark(3);
    }

    /** Turns the phase profile on (a bench's breakdown: each phase then waits for the device) and clears it. */
    void profile(boolean on) {
        clock.enable(on);
    }

    /** Host nanoseconds spent in each of {@link #PHASES} since profiling was turned on, or null when it is off. */
    long[] profile() {
        return clock.totals();
    }

    /**
     * Device time of one recorded stretch (a layer's attention, the head when {@code segment} is the layer count, the
     * whole decode step routed on the device when it is -1)
     * replayed back to back {@code times} times, in microseconds a replay; NaN when it has not been recorded. For
     * benches only: a replay recomputes that stretch on the sequence's current buffers.
     */
    double replayMicros(int segment, int times) {
        return PhaseClock.replayMicros(ops, segment < 0 ? stepGraph : graphs[segment], times);
    }

    private static long pointer(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    private Scratch scratch(int n) {
        if (scratch != null && scratch.tokens() >= n) {
            return scratch;
        }
        ops.synchronize();
        dropGraphs();
        int tokens = Math.max(n, scratch == null ? 1 : 2 * scratch.tokens());
        if (scratch != null) {
            scratch.close();
            scratch = null;
        }
        int hidden = model.config().hidden();
        DeviceModel.Widths widest = model.widest();
        int qWidth = widest.q();
        int qkvWidth = widest.qkv();
        int experts = widest.experts();
        long t = tokens;
        scratch = new Scratch(tokens, ops.allocate(8 + 4 * t), ops.allocate(FLOAT * t * hidden),
                ops.allocate(FLOAT * t * hidden), ops.allocate(FLOAT * t * qkvWidth), ops.allocate(FLOAT * t * qWidth),
                ops.allocate(FLOAT * t * hidden),
                ops.allocate(8 * t * experts), ops.allocate(FLOAT * t * model.config().vocab()),
                ops.allocate(ModelOps.slicePartialsBytes(tokens, Math.max(qkvWidth, hidden))));
        return scratch;
    }

    /** The device address of layer {@code layer}'s cache (it moves when {@link #reserveCache} grows it). */
    long cachePointer(int layer) {
        return caches[layer].pointer();
    }

    /** The model this sequence runs through. */
    DeviceModel model() {
        return model;
    }

    /** Grows every layer's cache (doubling, up to the context limit) to hold {@code positions} positions. */
    void reserveCache(int positions) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        if (positions <= cachePositions) {
            return;
        }
        int grown = Math.min(model.contextLimit(), Math.max(positions, Math.max(16, 2 * cachePositions)));
        ops.synchronize();
        dropGraphs();
        for (int l = 0; l < caches.length; l++) {
            GqaSpec g = model.layers().get(l).spec();
            long row = 2L * g.kvHeads() * g.headDim() * FLOAT;
            DeviceBuffer bigger = ops.allocate(row * grown);
            if (caches[l] != null) {
                bigger.copyFromDeviceAsync(caches[l], 0, 0, row * cachePositions, ops.stream());
                ops.synchronize();
                caches[l].close();
            }
            caches[l] = bigger;
        }
        cachePositions = grown;
    }

    @Override
    public void reset() {
        // Positions are overwritten as they are fed again; nothing to clear.
    }

    @Override
    public boolean rewind(long position) {
        return true; // every position is kept (sliding layers read their window from the full cache)
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ops.synchronize();
        dropGraphs();
        routes.close();
        chosen.close();
        if (scratch != null) {
            scratch.close();
        }
        for (DeviceBuffer c : caches) {
            if (c != null) {
                c.close();
            }
        }
        ops.close();
    }
}

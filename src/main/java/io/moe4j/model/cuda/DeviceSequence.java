package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.SequenceState;
import io.moe4j.model.TokenDraw;

import java.lang.foreign.MemorySegment;

/**
 * One sequence through a {@link DeviceModel}: a float32 KV cache per layer on the device (every position kept, so a
 * windowed layer's attention reads its window from it and rewinding is always possible; grouped-query layers hold
 * [position][k | v], latent-attention layers the rope key and the latent) and the activations of a
 * pass, both grown on demand. Between layers the hidden states stay on the device.
 *
 * <p>When every MoE layer routes on the device ({@link DeviceModel#routesOnDevice}) a pass of a few tokens has no
 * host round trip: the experts are chosen from the router logits on the device with the host's rules and their
 * routing plan is built there ({@link ModelOps#routeAndRunExperts}); only the token ids and the position tables go
 * in and the logits come out, and a decode step replays as one CUDA graph. Otherwise (and for prompts beyond one
 * device-routed pass) each MoE layer sends its router logits to the host, where {@link io.moe4j.routing.Router#select}
 * picks the experts.
 */
final class DeviceSequence implements SequenceState {
    private final DeviceModel model;
    private final ModelOps ops;
    private final DevicePass pass;
    /**
     * Every layer's cache in one allocation, layer l's [cachePositions][cacheWidth(l)] floats at cacheOffsets[l]:
     * growing it then costs one cuMemAlloc and one cuMemFree (each of which may wait for the device) instead of one a
     * layer.
     */
    private DeviceBuffer cache;
    private final long[] cacheOffsets;
    private int cachePositions;
    private PassScratch scratch;
    /** The decode step recorded whole (device routing), the pass generation it names, and whether one ran. */
    private CudaGraph stepGraph;
    private long stepGeneration;
    private boolean stepSeen;
    private boolean closed;
    /** With profiling on, host time of each of {@link #PHASES}. */
    private final PhaseClock clock;

    /** The phases {@link #profile} reports. */
    static final String[] PHASES = {"inputs", "attention", "expert choices to host", "experts", "head",
            "logits to host", "whole pass on the device"};

    DeviceSequence(DeviceModel model) {
        this.model = model;
        this.ops = model.openOps(); // a stream and landing buffer of its own: sessions of one model may run at once
        this.pass = new DevicePass(model, ops);
        this.clock = new PhaseClock(ops, PHASES.length);
        this.cacheOffsets = new long[model.layers().size()];
    }

    @Override
    public float[] forward(int[] tokens, long start, boolean allLogits) {
        int rows = allLogits ? tokens.length : 1;
        PassScratch s = run(tokens, start, rows);
        float[] logits = ops.readFloats(s.logits(), 0, rows * model.config().vocab());
        clock.mark(5);
        return logits;
    }

    /** The greedy choice made on the device: one int comes back instead of the vocabulary's logits. */
    @Override
    public int forwardGreedy(int[] tokens, long start) {
        PassScratch s = run(tokens, start, 1);
        int next = ops.argmax(s.logits().pointer(), model.config().vocab(), s.chosen());
        clock.mark(5);
        return next;
    }

    /**
     * A token drawn on the device from the last position's logits: one int comes back instead of the vocabulary's
     * logits (greedy draws take {@link #forwardGreedy}'s argmax).
     */
    @Override
    public int forwardDrawn(int[] tokens, long start, TokenDraw draw) {
        if (draw.isGreedy()) {
            return forwardGreedy(tokens, start);
        }
        PassScratch s = run(tokens, start, 1, draw);
        int next = ops.sampleRows(s.logits().pointer(), 1, model.config().vocab(), s.draws(), s.chosen())[0];
        clock.mark(5);
        return next;
    }

    /** Enqueues a pass whose last {@code rows} rows' logits are left in the scratch's logits buffer. */
    private PassScratch run(int[] tokens, long start, int rows) {
        return run(tokens, start, rows, null);
    }

    /** As {@link #run(int[], long, int)}, with the draw rule of the last row sent with the tables when not null. */
    private PassScratch run(int[] tokens, long start, int rows, TokenDraw draw) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        int n = tokens.length;
        reserveCache((int) (start + n));
        PassScratch s = scratch(n, rows);
        clock.mark(-1);
        long sent = s.tableBytes() + (draw == null ? 0 : PassScratch.drawBytes(1));
        MemorySegment staging = ops.staging(sent);
        for (int t = 0; t < n; t++) {
            s.stageRow(staging, t, tokens[t], start + t);
        }
        long[] addresses = new long[cacheOffsets.length];
        for (int l = 0; l < cacheOffsets.length; l++) {
            addresses[l] = cachePointer(l);
        }
        s.stageCaches(staging, 0, addresses);
        if (draw != null) {
            s.stageDraw(staging, 0, draw);
        }
        ops.send(s.inputs(), sent);
        clock.mark(0);
        if (onDevice(n)) {
            if (n == 1) {
                replayStep(() -> wholePass(s, n, rows));
            } else {
                wholePass(s, n, rows);
            }
            clock.mark(6);
            return s;
        }
        pass.embed(s, n);
        for (int l = 0; l < cacheOffsets.length; l++) {
            pass.attention(l, s, n);
            clock.mark(1);
            if (pass.onDevice(l, n)) {
                pass.feedForward(l, s, n);
            } else {
                pass.feedForwardHostRouted(l, s, n, () -> clock.mark(2));
            }
            clock.mark(3);
        }
        pass.head(s, n - rows, rows);
        clock.mark(4);
        return s;
    }

    /** Whether every layer's feed-forward of n rows runs without the host. */
    private boolean onDevice(int n) {
        for (int l = 0; l < cacheOffsets.length; l++) {
            if (!pass.onDevice(l, n)) {
                return false;
            }
        }
        return true;
    }

    /** A whole pass enqueued with no host round trip: ids in, logits of the last rows. */
    private void wholePass(PassScratch s, int n, int rows) {
        pass.embed(s, n);
        for (int l = 0; l < cacheOffsets.length; l++) {
            pass.attention(l, s, n);
            pass.feedForward(l, s, n);
        }
        pass.head(s, n - rows, rows);
    }

    /**
     * A decode step with no host round trip: the same launches every step (shapes, buffers, and the positions and
     * caches read from the tables), so from the second step on the whole pass replays as one CUDA graph. The first
     * run compiles and loads every kernel and grows the routes' buffers, which must not happen while a stream records.
     */
    private void replayStep(Runnable work) {
        if (stepGraph != null && stepGeneration != pass.generation()) {
            dropGraphs();
        }
        if (stepGraph == null && stepSeen) {
            long generation = pass.generation();
            stepGraph = ops.capture(work);
            stepGeneration = generation;
        }
        if (stepGraph != null) {
            stepGraph.launch(ops.stream());
        } else {
            work.run();
            stepSeen = true;
        }
    }

    /** Forgets the recorded step (the buffers it names are about to move). */
    private void dropGraphs() {
        if (stepGraph != null) {
            stepGraph.close();
            stepGraph = null;
        }
        stepSeen = false;
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
     * Device time of the recorded decode step replayed back to back {@code times} times, in microseconds a replay;
     * NaN when none has been recorded. For benches only: a replay recomputes that step on the current buffers.
     */
    double replayMicros(int times) {
        return PhaseClock.replayMicros(ops, stepGraph, times);
    }

    /** The scratch for passes of n rows whose last {@code rows} rows take logits, grown (after the device) if needed. */
    private PassScratch scratch(int n, int rows) {
        if (scratch != null && scratch.rows() >= n && scratch.logitRows() >= rows) {
            return scratch;
        }
        ops.synchronize();
        dropGraphs();
        int capacity = Math.max(n, scratch == null ? 1 : 2 * scratch.rows());
        int logitRows = Math.max(rows, scratch == null ? 1 : scratch.logitRows());
        if (scratch != null) {
            scratch.close();
            scratch = null;
        }
        scratch = new PassScratch(ops, model, capacity, 1, logitRows);
        return scratch;
    }

    /** The device address of layer {@code layer}'s cache (it moves when {@link #reserveCache} grows it). */
    long cachePointer(int layer) {
        return cache.pointer() + cacheOffsets[layer];
    }

    /** The model this sequence runs through. */
    DeviceModel model() {
        return model;
    }

    /**
     * Grows every layer's cache (doubling, up to the context limit) to hold {@code positions} positions. A recorded
     * step stays valid: passes read the caches' addresses from their tables.
     */
    void reserveCache(int positions) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        if (positions <= cachePositions) {
            return;
        }
        int grown = Math.min(model.contextLimit(), Math.max(positions, Math.max(16, 2 * cachePositions)));
        long[] offsets = new long[cacheOffsets.length];
        long bytes = 0;
        for (int l = 0; l < offsets.length; l++) {
            offsets[l] = bytes;
            bytes += (4L * model.layers().get(l).cacheWidth() * grown + 255) & ~255L; // layers 256-byte aligned
        }
        DeviceBuffer bigger = ops.allocate(bytes);
        if (cache != null) {
            // queued after every pass that used the old cache; its free below waits for the copies
            for (int l = 0; l < offsets.length; l++) {
                long row = 4L * model.layers().get(l).cacheWidth();
                bigger.copyFromDeviceAsync(cache, cacheOffsets[l], offsets[l], row * cachePositions, ops.stream());
            }
            ops.synchronize();
            cache.close();
        }
        cache = bigger;
        System.arraycopy(offsets, 0, cacheOffsets, 0, offsets.length);
        cachePositions = grown;
    }

    /**
     * A new sequence of the same model holding this one's first {@code position} positions: every layer's rows copied
     * on the device, after all work on this model's context (a batched step writes the caches on a stream of its own).
     */
    @Override
    public SequenceState fork(long position) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        DeviceSequence copy = (DeviceSequence) model.newSequence();
        try {
            if (position > 0) {
                copy.reserveCache((int) position);
                ops.context().synchronize();
                for (int l = 0; l < cacheOffsets.length; l++) {
                    long row = 4L * model.layers().get(l).cacheWidth();
                    copy.cache.copyFromDeviceAsync(cache, cacheOffsets[l], copy.cacheOffsets[l], row * position,
                            copy.ops.stream());
                }
                copy.ops.synchronize();
            }
            return copy;
        } catch (RuntimeException e) {
            copy.close();
            throw e;
        }
    }

    @Override
    public void reset() {
        // Positions are overwritten as they are fed again; nothing to clear.
    }

    @Override
    public boolean rewind(long position) {
        return true; // every position is kept (windowed layers read their window from the full cache)
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        ops.synchronize();
        dropGraphs();
        pass.close();
        if (scratch != null) {
            scratch.close();
        }
        if (cache != null) {
            cache.close();
        }
        ops.close();
    }
}

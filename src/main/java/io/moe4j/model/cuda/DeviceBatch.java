package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.CudaGraph;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;

import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Several sequences of one {@link DeviceModel} stepped in one forward (continuous batching): their new tokens are
 * the rows of one pass, so every linear, router and expert stage runs once over all rows (the weights read once for
 * the batch), while the q/k steps, the cache writes and attention take each row's own position and its sequence's
 * cache from the pass's tables ({@link PassScratch}). The experts are routed on the device, so a step has no host
 * round trip: the rows' ids, positions and cache addresses and each sequence's last row go in as one copy,
 * each sequence's last logits come out. A step of one token per sequence replays from a CUDA graph recorded for its
 * batch size (the tables are data, so the same graph serves any sequences of that size).
 *
 * <p>Not thread-safe: the model steps one batch at a time.
 */
final class DeviceBatch implements AutoCloseable {
    private final DeviceModel model;
    private final ModelOps ops;
    private final DevicePass pass;
    private PassScratch scratch;
    /** Recorded decode steps by batch size, and the pass generation they name. */
    private final Map<Integer, CudaGraph> graphs = new HashMap<>();
    private final Map<Integer, Boolean> seen = new HashMap<>();
    private long graphGeneration = -1;
    /** With profiling on, host time of each of {@link #PHASES}. */
    private final PhaseClock clock;

    /** The phases {@link #profile} reports. */
    static final String[] PHASES = {"inputs", "attention stretches", "routing and experts", "head", "logits to host"};

    DeviceBatch(DeviceModel model) {
        this.model = model;
        this.ops = model.openOps();
        this.pass = new DevicePass(model, ops);
        this.clock = new PhaseClock(ops, PHASES.length);
    }

    /**
     * Whether a batch of {@code rows} token rows runs without the host, and so can be recorded: every MoE layer
     * routed on the device within its pairs (else those layers send their choices to the host, {@link
     * DevicePass#feedForwardHostRouted}), and no exchange with other ranks.
     */
    static boolean onDevice(DeviceModel model, int rows) {
        return model.shard() == null && model.routesOnDevice()
                && (long) rows * Math.max(1, model.maxTopK()) <= ModelOps.DEVICE_ROUTED_PAIRS;
    }

    /**
     * One step (the caller checked the tokens): each sequence's logits after its last token, or
     * where {@code draws[i]} is not null the token it draws, on the device (only the other sequences' logits cross to
     * the host).
     */
    StepOutput step(List<DeviceSequence> sequences, List<int[]> tokens, long[] starts, TokenDraw[] draws) {
        return step(sequences, tokens, starts, draws, 0);
    }

    /**
     * {@link #step} on a rank of an expert-parallel model whose ranks each bring {@code perRank} rows to every MoE
     * exchange (this batch's rows padded up to it), or 0 outside one.
     */
    StepOutput step(List<DeviceSequence> sequences, List<int[]> tokens, long[] starts, TokenDraw[] draws,
                    int perRank) {
        int n = sequences.size();
        int rows = 0;
        for (int[] t : tokens) {
            rows += t.length;
        }
        if (perRank != 0 && perRank < rows) {
            throw new IllegalArgumentException(rows + " rows exceed the " + perRank + " a rank brings");
        }
        for (int i = 0; i < n; i++) {
            sequences.get(i).reserveCache((int) (starts[i] + tokens.get(i).length));
        }
        PassScratch s = scratch(Math.max(rows, perRank));
        int layers = model.layers().size();
        // one copy of the step's tables: ids, last rows, positions, each row's cache addresses, and the draw rules
        // when any sequence samples (a row that does not takes temperature 0, which the sampling kernel skips)
        boolean samples = false;
        for (TokenDraw d : draws) {
            samples |= d != null && !d.isGreedy();
        }
        long sent = s.tableBytes() + (samples ? PassScratch.drawBytes(n) : 0);
        MemorySegment in = ops.staging(sent);
        long[] addresses = new long[layers];
        int row = 0;
        for (int i = 0; i < n; i++) {
            int[] t = tokens.get(i);
            for (int l = 0; l < layers; l++) {
                addresses[l] = sequences.get(i).cachePointer(l);
            }
            for (int j = 0; j < t.length; j++, row++) {
                s.stageRow(in, row, t[j], starts[i] + j);
                s.stageCaches(in, row, addresses);
            }
            s.stageLastRow(in, i, row - 1);
            if (samples) {
                s.stageDraw(in, i, draws[i] != null && !draws[i].isGreedy() ? draws[i] : TokenDraw.greedy());
            }
        }
        clock.mark(-1);
        ops.send(s.inputs(), sent);
        clock.mark(0);
        int total = rows;
        if (model.shard() != null) { // the exchange waits for the host's routing: nothing to record
            pass.exchangeRows(perRank);
            try {
                wholePass(s, total, n);
            } finally {
                pass.exchangeRows(0);
            }
        } else if (rows == n && !clock.on() && onDevice(model, rows)) {
            replay(n, () -> wholePass(s, total, n));
        } else {
            wholePass(s, total, n);
        }
        clock.mark(3);
        int vocab = model.config().vocab();
        int[] drawn = new int[n];
        java.util.Arrays.fill(drawn, -1);
        boolean[] wanted = new boolean[n];
        boolean anyGreedy = false;
        for (int i = 0; i < n; i++) {
            wanted[i] = draws[i] == null;
            anyGreedy |= draws[i] != null && draws[i].isGreedy();
        }
        if (anyGreedy) {
            int[] ids = ops.argmaxRows(s.logits().pointer(), n, vocab, s.chosen());
            for (int i = 0; i < n; i++) {
                drawn[i] = draws[i] != null && draws[i].isGreedy() ? ids[i] : drawn[i];
            }
        }
        if (samples) {
            int[] ids = ops.sampleRows(s.logits().pointer(), n, vocab, s.draws(), s.chosen());
            for (int i = 0; i < n; i++) {
                drawn[i] = draws[i] != null && !draws[i].isGreedy() ? ids[i] : drawn[i];
            }
        }
        float[][] logits = ops.readRows(s.logits(), vocab, wanted);
        clock.mark(4);
        return new StepOutput(logits, drawn);
    }

    /** Replays the recorded step of this batch size, recording it on its second run (kernels loaded, buffers grown). */
    private void replay(int size, Runnable work) {
        if (graphGeneration != pass.generation()) {
            dropGraphs();
        }
        CudaGraph g = graphs.get(size);
        if (g == null && seen.getOrDefault(size, false)) {
            long generation = pass.generation();
            g = ops.capture(work);
            graphs.put(size, g);
            graphGeneration = generation;
        }
        if (g != null) {
            g.launch(ops.stream());
        } else {
            work.run();
            seen.put(size, true);
        }
    }

    private void wholePass(PassScratch s, int rows, int sequences) {
        pass.embed(s, rows);
        for (int l = 0; l < model.layers().size(); l++) {
            pass.attention(l, s, rows);
            clock.mark(1);
            if (pass.onDevice(l, rows)) {
                pass.feedForward(l, s, rows);
            } else {
                pass.feedForwardHostRouted(l, s, rows, () -> { });
            }
            clock.mark(2);
        }
        pass.headOfLastRows(s, rows, sequences);
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

    private PassScratch scratch(int rows) {
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
        scratch = new PassScratch(ops, model, capacity, capacity, capacity);
        return scratch;
    }

    private void dropGraphs() {
        graphs.values().forEach(CudaGraph::close);
        graphs.clear();
        seen.clear();
        graphGeneration = pass.generation();
    }

    @Override
    public void close() {
        ops.synchronize();
        dropGraphs();
        if (scratch != null) {
            scratch.close();
        }
        pass.close();
        ops.close();
    }
}

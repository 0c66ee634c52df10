package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.SequenceState;
import io.moe4j.routing.Routing;

/**
 * One sequence through a {@link DeviceModel}: a float32 KV cache per layer on the device ([position][k | v], every
 * position kept, so a sliding layer's attention reads its window and rewinding is always possible) and the
 * activation buffers of a pass, both grown on demand. Between layers the hidden states stay on the device; each MoE
 * layer sends its router logits to the host, where {@link io.moe4j.routing.Router#select} picks the experts with the
 * host's rules, and the experts' routing plan back.
 */
final class DeviceSequence implements SequenceState {
    private static final int FLOAT = 4;

    private final DeviceModel model;
    private final ModelOps ops;
    private final DeviceBuffer[] caches;
    private int cachePositions;
    private Scratch scratch;
    private boolean closed;

    /** A pass's activations for up to {@code tokens} tokens. */
    private record Scratch(int tokens, DeviceBuffer ids, DeviceBuffer h, DeviceBuffer xn, DeviceBuffer q, DeviceBuffer k,
                           DeviceBuffer v, DeviceBuffer attended, DeviceBuffer moeOut, DeviceBuffer routerLogits,
                           DeviceBuffer logits) implements AutoCloseable {
        @Override
        public void close() {
            for (DeviceBuffer b : new DeviceBuffer[] {ids, h, xn, q, k, v, attended, moeOut, routerLogits, logits}) {
                b.close();
            }
        }
    }

    DeviceSequence(DeviceModel model) {
        this.model = model;
        this.ops = model.ops();
        this.caches = new DeviceBuffer[model.layers().size()];
    }

    @Override
    public float[] forward(int[] tokens, long start, boolean allLogits) {
        if (closed) {
            throw new IllegalStateException("this sequence is closed");
        }
        int n = tokens.length;
        Scratch s = scratch(n);
        reserveCache((int) (start + n));
        int hidden = model.config().hidden();
        long h = s.h().pointer();
        long xn = s.xn().pointer();
        ops.write(tokens, s.ids(), 0);
        ops.embed(model.embedding().pointer(), s.ids().pointer(), h, n, hidden);
        for (int l = 0; l < caches.length; l++) {
            layer(model.layers().get(l), caches[l], s, n, start);
        }
        int rows = allLogits ? n : 1;
        long last = h + (long) (n - rows) * hidden * FLOAT;
        float eps = model.config().normEps();
        ops.rmsNorm(last, model.finalNorm().pointer(), xn, rows, hidden, eps);
        int vocab = model.config().vocab();
        ops.linearBf16(xn, model.lmHead().pointer(), 0, s.logits().pointer(), rows, hidden, vocab, false);
        return ops.readFloats(s.logits(), 0, rows * vocab);
    }

    /** h += attention(norm(h)); h += experts(norm(h)), all on the device but the expert selection. */
    private void layer(DeviceModel.Layer layer, DeviceBuffer cache, Scratch s, int n, long start) {
        GqaSpec g = layer.spec();
        int hidden = model.config().hidden();
        float eps = model.config().normEps();
        int d = g.headDim();
        int qWidth = g.heads() * d;
        int kvWidth = g.kvHeads() * d;
        long h = s.h().pointer();
        long xn = s.xn().pointer();
        long q = s.q().pointer();
        long k = s.k().pointer();
        long v = s.v().pointer();
        ops.rmsNorm(h, layer.inputNorm().pointer(), xn, n, hidden, eps);
        ops.linearBf16(xn, layer.q().pointer(), pointer(layer.qBias()), q, n, hidden, qWidth, false);
        ops.linearBf16(xn, layer.k().pointer(), pointer(layer.kBias()), k, n, hidden, kvWidth, false);
        ops.linearBf16(xn, layer.v().pointer(), pointer(layer.vBias()), v, n, hidden, kvWidth, false);
        DeviceModel.RopeTables rope = layer.rope();
        ops.rope(q, n, g.heads(), qWidth, d, rope.cos().pointer(), rope.sin().pointer(), start, rope.half(),
                rope.interleaved());
        ops.rope(k, n, g.kvHeads(), kvWidth, d, rope.cos().pointer(), rope.sin().pointer(), start, rope.half(),
                rope.interleaved());
        ops.kvStore(k, v, cache.pointer(), n, kvWidth, start);
        ops.attend(q, cache.pointer(), pointer(layer.sinks()), s.attended().pointer(), n, start, g.heads(),
                g.kvHeads(), d, layer.window(), g.scale());
        ops.linearBf16(s.attended().pointer(), layer.o().pointer(), pointer(layer.oBias()), h, n, qWidth, hidden, true);

        ops.rmsNorm(h, layer.postNorm().pointer(), xn, n, hidden, eps);
        int experts = layer.moe().router().spec().numExperts();
        ops.routerLogits(xn, layer.routerWeight().pointer(), pointer(layer.routerBias()), s.routerLogits().pointer(),
                n, experts, hidden);
        double[] logits = ops.readDoubles(s.routerLogits(), n * experts);
        Routing routing = layer.moe().router().select(logits, n);
        ops.experts(layer.moe().experts(), s.xn(), n, routing, s.moeOut());
        ops.add(h, s.moeOut().pointer(), (long) n * hidden);
    }

    private static long pointer(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    private Scratch scratch(int n) {
        if (scratch != null && scratch.tokens() >= n) {
            return scratch;
        }
        ops.synchronize();
        int tokens = Math.max(n, scratch == null ? 1 : 2 * scratch.tokens());
        if (scratch != null) {
            scratch.close();
            scratch = null;
        }
        int hidden = model.config().hidden();
        int qWidth = 0;
        int kvWidth = 0;
        int experts = 0;
        for (DeviceModel.Layer l : model.layers()) {
            qWidth = Math.max(qWidth, l.spec().heads() * l.spec().headDim());
            kvWidth = Math.max(kvWidth, l.spec().kvHeads() * l.spec().headDim());
            experts = Math.max(experts, l.moe().router().spec().numExperts());
        }
        long t = tokens;
        scratch = new Scratch(tokens, ops.allocate(4 * t), ops.allocate(FLOAT * t * hidden),
                ops.allocate(FLOAT * t * hidden), ops.allocate(FLOAT * t * qWidth), ops.allocate(FLOAT * t * kvWidth),
                ops.allocate(FLOAT * t * kvWidth), ops.allocate(FLOAT * t * qWidth), ops.allocate(FLOAT * t * hidden),
                ops.allocate(8 * t * experts), ops.allocate(FLOAT * t * model.config().vocab()));
        return scratch;
    }

    /** Grows every layer's cache (doubling, up to the context limit) to hold {@code positions} positions. */
    private void reserveCache(int positions) {
        if (positions <= cachePositions) {
            return;
        }
        int grown = Math.min(model.contextLimit(), Math.max(positions, Math.max(16, 2 * cachePositions)));
        ops.synchronize();
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
        if (scratch != null) {
            scratch.close();
        }
        for (DeviceBuffer c : caches) {
            if (c != null) {
                c.close();
            }
        }
    }
}

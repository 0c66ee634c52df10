package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.DeviceLinear;
import io.moe4j.backend.cuda.DeviceRoutes;
import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.MlaSpec;
import io.moe4j.routing.Routing;

/**
 * The launches of a forward pass over token rows of a {@link DeviceModel}, on one {@link ModelOps} stream, shared by a
 * sequence's passes ({@link DeviceSequence}) and batched steps ({@link DeviceBatch}): the rows' positions and caches
 * come from the {@link PassScratch} tables, so the same launches serve one sequence or many. Per layer:
 * <pre>
 *   h += the previous layer's feed-forward output; xn = norm(h)
 *   attention of xn (q|k|v or MLA's projections, norms, RoPE, the cache, softmax), h += o(...)
 *   xn = norm(h); the feed-forward of xn into ffOut (+ sharedOut): routed experts, dense MLP
 * </pre>
 * Not thread-safe: the owner runs one pass at a time.
 */
final class DevicePass implements AutoCloseable {
    private static final int FLOAT = 4;

    private final DeviceModel model;
    private final ModelOps ops;
    /** The device memory of MoE layers routed on the device, and of shared experts (planned the same way). */
    private final DeviceRoutes routes;
    private final DeviceRoutes sharedRoutes;
    /** The MoE layers' exchange with the other ranks of an expert-parallel model, or null. */
    private final ExpertExchange exchange;
    /** The rows every rank brings to the exchange in the current pass (a batch's largest share), 0: the pass's own. */
    private int exchangeRows;

    DevicePass(DeviceModel model, ModelOps ops) {
        this.model = model;
        this.ops = ops;
        this.routes = ops.newRoutes();
        this.sharedRoutes = ops.newRoutes();
        this.exchange = model.newExchange(ops);
    }

    /**
     * Sets the rows each rank brings to the MoE exchange in the passes that follow (at least this pass's rows; the
     * ranks of an expert-parallel batch bring the same number, padded), or 0 for the pass's own rows.
     */
    void exchangeRows(int rows) {
        exchangeRows = rows;
    }

    /** Changes whenever a buffer a recorded pass names moves. */
    long generation() {
        return routes.generation() + sharedRoutes.generation();
    }

    /** The embedding rows of the pass's ids into h. */
    void embed(PassScratch s, int rows) {
        ops.embed(model.embedding().pointer(), s.ids(), s.h().pointer(), rows, model.config().hidden());
    }

    /**
     * h += the previous layer's output (none before layer 0), xn = its input norm; attention; h += its output;
     * xn = the post-attention norm of h, the feed-forward's input.
     */
    void attention(int l, PassScratch s, int rows) {
        DeviceModel.Layer layer = model.layers().get(l);
        int hidden = model.config().hidden();
        float eps = model.config().normEps();
        long h = s.h().pointer();
        long xn = s.xn().pointer();
        DeviceLinear qkvPrepared = qkvPreparedByNorm(layer);
        residualNorm(l, s, rows, layer.inputNorm().pointer(), h, xn, qkvPrepared);
        switch (layer.attention()) {
            case DeviceModel.Gqa g -> gqa(l, g, s, rows, qkvPrepared != null);
            case DeviceModel.Mla m -> mla(l, m, s, rows, qkvPrepared != null);
        }
        if (!normInRouter(l, rows)) {
            ops.rmsNorm(h, 0L, layer.postNorm().pointer(), xn, rows, hidden, eps);
        }
    }

    /**
     * Whether layer l's post-attention norm is taken in its router's kernel ({@link ModelOps#normRouterLogits}: MoE
     * layers, passes of a few rows), which then writes xn; else {@link #attention} writes it.
     */
    private boolean normInRouter(int l, int rows) {
        return exchange == null && rows <= ModelOps.NORM_ROUTER_TOKENS
                && model.layers().get(l).feedForward() instanceof DeviceModel.Moe;
    }

    /**
     * The stacked q|k|v linear of layer {@code layer} when its input norm can apply the linear's input rule as it
     * writes xn ({@link ModelOps#rmsNormForLinear}: quantized activations, one rule for q, k and v), else null.
     */
    private DeviceLinear qkvPreparedByNorm(DeviceModel.Layer layer) {
        int hidden = model.config().hidden();
        DeviceLinear first = switch (layer.attention()) {
            case DeviceModel.Gqa g -> g.qkv();
            case DeviceModel.Mla m -> m.qAkvA();
        };
        return first != null && first.normPreparesInput(hidden) ? first : null;
    }

    /**
     * h += the output of layer l - 1's feed-forward (routed and shared) and out = norm(h) with {@code weight}, taken
     * through {@code next}'s input rule when given.
     */
    private void residualNorm(int l, PassScratch s, int rows, long weight, long h, long out, DeviceLinear next) {
        long add = l > 0 ? s.ffOut().pointer() : 0L;
        long add2 = l > 0 ? sharedOutput(l - 1, s) : 0L;
        int hidden = model.config().hidden();
        float eps = model.config().normEps();
        if (next != null) {
            ops.rmsNormForLinear(h, add, add2, weight, out, rows, hidden, eps, next);
        } else {
            ops.rmsNorm(h, add, add2, weight, out, rows, hidden, eps);
        }
    }

    /** Where layer l's shared experts leave their output (added into h beside ffOut), or 0 when it has none. */
    private long sharedOutput(int l, PassScratch s) {
        return model.layers().get(l).feedForward() instanceof DeviceModel.Moe m && m.hasShared()
                ? s.sharedOut().pointer() : 0L;
    }

    /**
     * Rows [from, from + count) of h take the last layer's output and their final norm, into xn from its start (only
     * the rows wanted: h is not read again, the next pass embeds anew).
     */
    private void finalNorm(PassScratch s, int from, int count) {
        int hidden = model.config().hidden();
        long at = (long) from * hidden * FLOAT;
        long add2 = sharedOutput(model.layers().size() - 1, s);
        ops.rmsNorm(s.h().pointer() + at, s.ffOut().pointer() + at, add2 == 0L ? 0L : add2 + at,
                model.finalNorm().pointer(), s.xn().pointer(), count, hidden, model.config().normEps());
    }

    /** Layer l's attention; {@code qkvPrepared}: xn already went through the stacked q|k|v linear's input rule. */
    private void gqa(int l, DeviceModel.Gqa g, PassScratch s, int rows, boolean qkvPrepared) {
        GqaSpec spec = g.spec();
        int hidden = model.config().hidden();
        int d = spec.headDim();
        int qWidth = spec.heads() * d;
        int kvWidth = spec.kvHeads() * d;
        int qkvWidth = g.qkvWidth();
        long xn = s.xn().pointer();
        long qkv = s.qkv().pointer();
        if (qkvPrepared) {
            ops.linearOfPrepared(g.qkv(), xn, qkv, qkvWidth, rows, false, s.partials().pointer(),
                    s.partials().byteSize());
        } else if (g.qkv() != null) {
            linear(g.qkv(), xn, qkv, qkvWidth, rows, false, s);
        } else {
            linear(g.q(), xn, qkv, qkvWidth, rows, false, s);
            linear(g.k(), xn, qkv + (long) FLOAT * qWidth, qkvWidth, rows, false, s);
            linear(g.v(), xn, qkv + (long) FLOAT * (qWidth + kvWidth), qkvWidth, rows, false, s);
        }
        DeviceModel.RopeTables rope = g.rope();
        ops.positionRows(qkv, rows, spec.heads(), spec.kvHeads(), d, rope == null ? 0L : rope.cos().pointer(),
                rope == null ? 0L : rope.sin().pointer(), rope != null && rope.interleaved(), g.normMode(),
                pointer(g.qNorm()), pointer(g.kNorm()), model.config().normEps(), g.temperature(), s.positions(),
                s.caches(l), perRow(s));
        // o's input rule goes into the attention's output where it can: one kernel fewer on the step's chain
        boolean oPrepared = ops.attendRows(qkv, qkvWidth, s.caches(l), perRow(s), pointer(g.sinks()),
                s.attended().pointer(), rows, s.positions(), spec.heads(), spec.kvHeads(), d, g.window(),
                spec.scale(), s.attendPartials().pointer(), s.attendPartials().byteSize(), s.arrivals().pointer(),
                s.arrivals().byteSize(), g.o());
        if (oPrepared) {
            ops.linearOfPrepared(g.o(), s.attended().pointer(), s.h().pointer(), hidden, rows, true,
                    s.partials().pointer(), s.partials().byteSize());
        } else {
            linear(g.o(), s.attended().pointer(), s.h().pointer(), hidden, rows, true, s);
        }
    }

    /** Layer l's latent attention; {@code stackPrepared}: xn already went through q_a|kv_a's input rule. */
    private void mla(int l, DeviceModel.Mla m, PassScratch s, int rows, boolean stackPrepared) {
        MlaSpec spec = m.spec();
        int hidden = model.config().hidden();
        int heads = spec.heads();
        int qk = spec.nopeDim() + spec.ropeDim();
        int lora = spec.kvLoraRank();
        long xn = s.xn().pointer();
        long q = s.qkv().pointer();
        long qLatent = s.qLatent().pointer();
        long latent = s.latent().pointer();
        if (m.qAkvA() != null) {
            // one linear for both: a token's row is [q latent | kv latent and rope key]; one row is read in place,
            // several are split into the two buffers (the kernels after read rows of their own width)
            int width = m.stackedWidth();
            long stacked = s.stacked().pointer();
            if (stackPrepared) {
                ops.linearOfPrepared(m.qAkvA(), xn, stacked, width, rows, false, s.partials().pointer(),
                        s.partials().byteSize());
            } else {
                linear(m.qAkvA(), xn, stacked, width, rows, false, s);
            }
            if (rows == 1) {
                qLatent = stacked;
                latent = stacked + (long) FLOAT * spec.qLoraRank();
            } else {
                ops.splitRows(stacked, rows, width, qLatent, spec.qLoraRank(), latent, lora + spec.ropeDim());
            }
        } else if (m.qA() != null) {
            linear(m.qA(), xn, qLatent, spec.qLoraRank(), rows, false, s);
        }
        if (m.qANorm() != null) {
            long normed = s.qLatentNormed().pointer();
            ops.rmsNorm(qLatent, 0L, m.qANorm().pointer(), normed, rows, spec.qLoraRank(), spec.normEps());
            linear(m.qB(), normed, q, heads * qk, rows, false, s);
        } else {
            linear(m.qB(), xn, q, heads * qk, rows, false, s);
        }
        if (m.kvA() != null) {
            linear(m.kvA(), xn, latent, lora + spec.ropeDim(), rows, false, s);
        }
        DeviceModel.RopeTables rope = m.rope();
        ops.mlaPositionRows(q, rows, heads, spec.nopeDim(), spec.ropeDim(), latent, lora, m.kvANorm().pointer(),
                spec.normEps(), s.latentNormed().pointer(), rope.cos().pointer(), rope.sin().pointer(),
                rope.interleaved(), s.positions(), s.caches(l), perRow(s), m.cacheWidth());
        // the latents as kv_b_proj reads them go into the cache; attention takes kv_b_proj into queries and output
        long prepared = ops.linearInput(m.kvB(), s.latentNormed().pointer(), rows, s.linearInput().pointer(),
                s.linearInput().byteSize());
        ops.mlaStoreRows(prepared, rows, lora, spec.ropeDim(), s.positions(), s.caches(l), perRow(s));
        boolean oPrepared = ops.attendLatentRows(q, m.kvBRows().pointer(), s.caches(l), perRow(s),
                s.attended().pointer(), rows, s.positions(), heads, spec.nopeDim(), spec.ropeDim(), spec.vDim(), lora,
                spec.scale(), m.o());
        if (oPrepared) {
            ops.linearOfPrepared(m.o(), s.attended().pointer(), s.h().pointer(), hidden, rows, true,
                    s.partials().pointer(), s.partials().byteSize());
        } else {
            linear(m.o(), s.attended().pointer(), s.h().pointer(), hidden, rows, true, s);
        }
    }

    /** Whether layer l's feed-forward runs without the host ({@link #feedForward}); else {@link #feedForwardHostRouted}. */
    boolean onDevice(int l, int rows) {
        return !(model.layers().get(l).feedForward() instanceof DeviceModel.Moe m)
                || model.routesOnDevice() && (long) rows * m.layer().router().spec().topK()
                        <= ModelOps.DEVICE_ROUTED_PAIRS;
    }

    /** Layer l's feed-forward of xn into ffOut (and sharedOut), enqueued with no host round trip. */
    void feedForward(int l, PassScratch s, int rows) {
        switch (model.layers().get(l).feedForward()) {
            case DeviceModel.Dense d -> dense(d, s, rows);
            case DeviceModel.Moe m when exchange != null -> exchanged(m, s, rows);
            case DeviceModel.Moe m -> {
                routerLogits(l, m, s, rows);
                ops.routeAndRunExperts(m.layer().experts(), m.layer().router().spec(), s.routerLogits().pointer(),
                        pointer(m.routerCorrection()), s.xn(), rows, s.ffOut(), routes);
                shared(m, s, rows);
            }
        }
    }

    /**
     * A MoE layer's feed-forward with its experts' plan made on the host (a wait for the device each layer: prompts
     * beyond one device-routed pass, or {@code -Dmoe4j.cuda.hostRouting}), which lets the experts take the tile GEMMs:
     * where the model routes on the device, moe_router_select chooses and only the choices come back (a 2048-token
     * pass of gpt-oss: 64 KB instead of 512 KB of logits, and no host selection); otherwise the router logits come
     * back and {@code Router.select} picks. {@code afterChoices} marks the profile.
     */
    void feedForwardHostRouted(int l, PassScratch s, int rows, Runnable afterChoices) {
        DeviceModel.Moe m = (DeviceModel.Moe) model.layers().get(l).feedForward();
        if (exchange != null) {
            exchanged(m, s, rows);
            afterChoices.run();
            return;
        }
        routerLogits(l, m, s, rows);
        io.moe4j.routing.RouterSpec spec = m.layer().router().spec();
        Routing routing;
        if (model.routesOnDevice()) {
            ops.selectExperts(s.routerLogits().pointer(), spec, pointer(m.routerCorrection()), rows, routes);
            routing = ops.readChoices(routes, spec, rows);
        } else {
            double[] logits = ops.readDoubles(s.routerLogits(), rows * spec.numExperts());
            routing = m.layer().router().select(logits, rows);
        }
        afterChoices.run();
        ops.experts(m.layer().experts(), s.xn(), rows, routing, s.ffOut());
        shared(m, s, rows);
    }

    /**
     * A MoE layer of one rank of an expert-parallel model: the routed experts over every rank's rows through the
     * exchange (this pass's rows its share), the shared experts on this pass's rows here.
     */
    private void exchanged(DeviceModel.Moe m, PassScratch s, int rows) {
        exchange.routed(m, s.xn(), rows, Math.max(rows, exchangeRows), s.ffOut());
        shared(m, s, rows);
    }

    /** Layer l's router logits of xn, and xn itself first where the router takes the norm ({@link #normInRouter}). */
    private void routerLogits(int l, DeviceModel.Moe m, PassScratch s, int rows) {
        int experts = m.layer().router().spec().numExperts();
        int hidden = model.config().hidden();
        if (normInRouter(l, rows)) {
            ops.normRouterLogits(s.h().pointer(), model.layers().get(l).postNorm().pointer(),
                    model.config().normEps(), s.xn().pointer(), m.routerWeight().pointer(), pointer(m.routerBias()),
                    s.routerLogits().pointer(), rows, experts, hidden);
        } else {
            ops.routerLogits(s.xn().pointer(), m.routerWeight().pointer(), pointer(m.routerBias()),
                    s.routerLogits().pointer(), rows, experts, hidden);
        }
    }

    /**
     * The shared experts of xn into sharedOut: planned on the device like routed experts, or, for more rows than one
     * device-planned pass takes (a long prompt routed on the host), with a plan made on the host.
     */
    private void shared(DeviceModel.Moe m, PassScratch s, int rows) {
        if (!m.hasShared()) {
            return;
        }
        if (rows <= ModelOps.DEVICE_ROUTED_PAIRS) {
            ops.sharedExperts(m.layer().sharedExperts(), s.xn(), rows, s.sharedOut(), sharedRoutes);
        } else {
            float[] ones = new float[rows];
            java.util.Arrays.fill(ones, 1f);
            ops.experts(m.layer().sharedExperts(), s.xn(), rows, new Routing(rows, 1, new int[rows], ones, false),
                    s.sharedOut());
        }
    }

    private void dense(DeviceModel.Dense d, PassScratch s, int rows) {
        int inter = d.gate().outFeatures();
        int hidden = model.config().hidden();
        long xn = s.xn().pointer();
        linear(d.gate(), xn, s.gate().pointer(), inter, rows, false, s);
        linear(d.up(), xn, s.up().pointer(), inter, rows, false, s);
        ops.siluMul(s.gate().pointer(), s.up().pointer(), (long) rows * inter);
        linear(d.down(), s.gate().pointer(), s.ffOut().pointer(), hidden, rows, false, s);
    }

    /** The final norm of {@code count} rows from {@code from} of h, then lm_head into the logits buffer. */
    void head(PassScratch s, int from, int count) {
        finalNorm(s, from, count);
        lmHead(s, s.xn().pointer(), count);
    }

    /**
     * A batch's head: every row takes the last layer's output and the final norm, lm_head reads each sequence's last
     * row (the lastRows table) into the logits, one row a sequence.
     */
    void headOfLastRows(PassScratch s, int rows, int sequences) {
        finalNorm(s, 0, rows);
        ops.gatherRows(s.xn().pointer(), s.lastRows(), s.last().pointer(), sequences, model.config().hidden());
        lmHead(s, s.last().pointer(), sequences);
    }

    private void lmHead(PassScratch s, long x, int rows) {
        int hidden = model.config().hidden();
        int vocab = model.config().vocab();
        DeviceLinear head = model.lmHead();
        if (head == null) {
            ops.linearBf16(x, model.embedding().pointer(), 0L, s.logits().pointer(), rows, hidden, vocab, false,
                    s.partials().pointer(), s.partials().byteSize());
        } else {
            linear(head, x, s.logits().pointer(), vocab, rows, false, s);
        }
    }

    private void linear(DeviceLinear lin, long x, long y, int yPitch, int rows, boolean accumulate, PassScratch s) {
        ops.linear(lin, x, y, yPitch, rows, accumulate, s.linearInput().pointer(), s.linearInput().byteSize(),
                s.partials().pointer(), s.partials().byteSize());
    }

    /** Whether the cache table holds an address a row (a batch's rows) or one for all rows (a sequence's passes). */
    private static boolean perRow(PassScratch s) {
        return s.cacheEntries() > 1;
    }

    private static long pointer(DeviceBuffer b) {
        return b == null ? 0L : b.pointer();
    }

    @Override
    public void close() {
        routes.close();
        sharedRoutes.close();
        if (exchange != null) {
            exchange.close();
        }
    }
}

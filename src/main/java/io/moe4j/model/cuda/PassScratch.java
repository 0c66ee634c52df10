package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.model.TokenDraw;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The device memory of passes of up to {@code rows} token rows: the tables a pass reads (token ids and positions of
 * the rows, each sequence's last row, the caches' device addresses per layer) and the activations between its
 * kernels. The tables sit at offsets fixed by the capacity, so a recorded step names the same addresses whatever rows
 * it carries; {@link #stageRow}, {@link #stageLastRow} and {@link #stageCaches} fill their host copy and {@link
 * #tableBytes} says how much of it a pass sends. A sequence's own passes keep one cache entry a layer (every row is
 * of that sequence); a batch's keep one a row.
 *
 * <p>Table layout (bytes from {@code inputs}): ids int32 [rows] | lastRows int32 [rows], padded to 8 |
 * positions int64 [rows] | caches int64 [layers][cacheEntries] (device addresses) | draw rules
 * [logitRows] ({@link ModelOps#DRAW_RULE_BYTES} each), sent only by passes that draw on the device.
 */
final class PassScratch implements AutoCloseable {
    private static final int FLOAT = 4;

    private final int rows;
    private final int cacheEntries;
    private final int layers;
    private final int logitRows;
    private final List<DeviceBuffer> all = new ArrayList<>();
    private final DeviceBuffer inputs;
    /** The residual stream h, its norm xn, and the feed-forward's outputs that the next norm adds into h. */
    private final DeviceBuffer h;
    private final DeviceBuffer xn;
    private final DeviceBuffer ffOut;
    private final DeviceBuffer sharedOut;
    /** q|k|v rows (grouped-query) or the queries (latent attention), and attention's output. */
    private final DeviceBuffer qkv;
    private final DeviceBuffer attended;
    /** Latent attention: the query latent (and normalized), the kv latent [lora + rope], its normalized part. */
    private final DeviceBuffer qLatent;
    private final DeviceBuffer qLatentNormed;
    private final DeviceBuffer latent;
    private final DeviceBuffer latentNormed;
    /** Latent attention's q_a|kv_a rows where one stacked linear makes both. */
    private final DeviceBuffer stacked;
    /** A dense MLP's gate and up rows. */
    private final DeviceBuffer gate;
    private final DeviceBuffer up;
    private final DeviceBuffer routerLogits;
    /** The prepared input rows of a linear that quantizes its input. */
    private final DeviceBuffer linearInput;
    /** lm_head's input rows (a batch's last rows) and its logits, [logitRows, vocab]. */
    private final DeviceBuffer last;
    private final DeviceBuffer logits;
    /** Greedy choices read back, one int a logits row. */
    private final DeviceBuffer chosen;
    private final DeviceBuffer partials;
    /** Grouped-query attention's pieces of a row's span on their way to the merge, and its arrival counters. */
    private final DeviceBuffer attendPartials;
    private final DeviceBuffer arrivals;

    /**
     * @param cacheEntries cache addresses a layer: 1 (one sequence) or {@code rows} (a batch: one a row)
     * @param logitRows    the most rows lm_head runs over in one pass (all rows of a prompt whose every logit is
     *                     wanted, or one a sequence)
     */
    PassScratch(ModelOps ops, DeviceModel model, int rows, int cacheEntries, int logitRows) {
        this.rows = rows;
        this.cacheEntries = cacheEntries;
        this.layers = model.layers().size();
        this.logitRows = logitRows;
        DeviceModel.Widths w = model.widths();
        int hidden = model.config().hidden();
        long r = rows;
        try {
            inputs = keep(ops.allocate(tableBytes() + drawBytes(logitRows)));
            h = keep(ops.allocate(FLOAT * r * hidden));
            xn = keep(ops.allocate(FLOAT * r * hidden));
            ffOut = keep(ops.allocate(FLOAT * r * hidden));
            sharedOut = w.shared() ? keep(ops.allocate(FLOAT * r * hidden)) : null;
            qkv = keep(ops.allocate(FLOAT * r * w.qkv()));
            attended = keep(ops.allocate(FLOAT * r * w.attended()));
            qLatent = keep(ops.allocate(FLOAT * r * w.qLatent()));
            qLatentNormed = keep(ops.allocate(FLOAT * r * w.qLatent()));
            latent = keep(ops.allocate(FLOAT * r * w.latent()));
            stacked = keep(ops.allocate(FLOAT * r * w.stacked()));
            latentNormed = keep(ops.allocate(FLOAT * r * w.latentNormed()));
            gate = keep(ops.allocate(FLOAT * r * w.intermediate()));
            up = keep(ops.allocate(FLOAT * r * w.intermediate()));
            routerLogits = keep(ops.allocate(8 * r * w.experts()));
            linearInput = keep(ops.allocate(FLOAT * r * w.linearInput()));
            last = keep(ops.allocate(FLOAT * (long) logitRows * hidden));
            logits = keep(ops.allocate(FLOAT * (long) logitRows * model.config().vocab()));
            chosen = keep(ops.allocate(4L * logitRows));
            int widest = Math.max(Math.max(hidden, w.qkv()), w.intermediate());
            partials = keep(ops.allocate(ModelOps.slicePartialsBytes(rows, widest)));
            long pieces = 0;
            int kvHeads = 0;
            for (DeviceModel.Layer l : model.layers()) {
                if (l.attention() instanceof DeviceModel.Gqa g) {
                    var spec = g.spec();
                    pieces = Math.max(pieces, ops.attendPartialsBytes(rows, spec.heads(), spec.kvHeads(),
                            spec.headDim()));
                    kvHeads = Math.max(kvHeads, spec.kvHeads());
                }
            }
            attendPartials = keep(ops.allocate(pieces));
            // the counters start at zero (a blocking copy of zero bits); each pass leaves them so
            arrivals = keep(ops.upload(new float[Math.toIntExact(Math.max(1, r * kvHeads))]));
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private DeviceBuffer keep(DeviceBuffer b) {
        all.add(b);
        return b;
    }

    DeviceBuffer inputs() {
        return inputs;
    }

    DeviceBuffer h() {
        return h;
    }

    DeviceBuffer xn() {
        return xn;
    }

    DeviceBuffer ffOut() {
        return ffOut;
    }

    DeviceBuffer sharedOut() {
        return sharedOut;
    }

    DeviceBuffer qkv() {
        return qkv;
    }

    DeviceBuffer attended() {
        return attended;
    }

    DeviceBuffer qLatent() {
        return qLatent;
    }

    DeviceBuffer qLatentNormed() {
        return qLatentNormed;
    }

    DeviceBuffer attendPartials() {
        return attendPartials;
    }

    DeviceBuffer arrivals() {
        return arrivals;
    }

    DeviceBuffer stacked() {
        return stacked;
    }

    DeviceBuffer latent() {
        return latent;
    }

    DeviceBuffer latentNormed() {
        return latentNormed;
    }

    DeviceBuffer gate() {
        return gate;
    }

    DeviceBuffer up() {
        return up;
    }

    DeviceBuffer routerLogits() {
        return routerLogits;
    }

    DeviceBuffer linearInput() {
        return linearInput;
    }

    DeviceBuffer last() {
        return last;
    }

    DeviceBuffer logits() {
        return logits;
    }

    DeviceBuffer chosen() {
        return chosen;
    }

    DeviceBuffer partials() {
        return partials;
    }

    int rows() {
        return rows;
    }

    int cacheEntries() {
        return cacheEntries;
    }

    /** The most rows lm_head takes in one pass. */
    int logitRows() {
        return logitRows;
    }

    long ids() {
        return inputs.pointer();
    }

    long lastRows() {
        return inputs.pointer() + 4L * rows;
    }

    private long positionsOffset() {
        return (8L * rows + 7) & ~7L;
    }

    long positions() {
        return inputs.pointer() + positionsOffset();
    }

    private long cachesOffset(int layer) {
        return positionsOffset() + 8L * rows + 8L * cacheEntries * layer;
    }

    long caches(int layer) {
        return inputs.pointer() + cachesOffset(layer);
    }

    /** Bytes of the tables. */
    long tableBytes() {
        return cachesOffset(layers);
    }

    /** The draw rules after the tables: one a logits row. */
    long draws() {
        return inputs.pointer() + tableBytes();
    }

    /** Bytes of {@code count} draw rules. */
    static long drawBytes(int count) {
        return (long) ModelOps.DRAW_RULE_BYTES * count;
    }

    /** Logits row {@code row}'s draw rule into the host copy, after the tables. */
    void stageDraw(MemorySegment staging, int row, TokenDraw draw) {
        ModelOps.stageDrawRule(staging, tableBytes() + drawBytes(row), draw.uniform(), draw.temperature(),
                draw.topP(), draw.minP(), draw.topK());
    }

    /** Row {@code row}'s token id and position into the host copy (pinned staging of {@link #tableBytes}). */
    void stageRow(MemorySegment staging, int row, int id, long position) {
        staging.set(ValueLayout.JAVA_INT, 4L * row, id);
        staging.set(ValueLayout.JAVA_LONG, positionsOffset() + 8L * row, position);
    }

    /** Sequence {@code sequence}'s last row (where a batch's lm_head reads it). */
    void stageLastRow(MemorySegment staging, int sequence, int lastRow) {
        staging.set(ValueLayout.JAVA_INT, 4L * rows + 4L * sequence, lastRow);
    }

    /** The device addresses of cache entry {@code entry}'s caches, one a layer. */
    void stageCaches(MemorySegment staging, int entry, long[] cachesByLayer) {
        for (int l = 0; l < layers; l++) {
            staging.set(ValueLayout.JAVA_LONG, cachesOffset(l) + 8L * entry, cachesByLayer[l]);
        }
    }

    @Override
    public void close() {
        for (DeviceBuffer b : all) {
            b.close();
        }
        all.clear();
    }
}

package io.moe4j.quant.method;

import io.moe4j.MoeException;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.Projection;
import io.moe4j.kernel.GateLayout;
import io.moe4j.quant.BlockScales;
import io.moe4j.quant.CodeType;
import io.moe4j.kernel.ActivationQuant;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.ScaleType;
import io.moe4j.quant.ExpectedTensor;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.WeightFormat;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.SafetensorsException;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;
import static io.moe4j.quant.method.TensorChecks.expect;
import static io.moe4j.quant.method.TensorChecks.scalar;

/**
 * What every method does with a layer's expert tensors: pick the local experts, name and check each tensor, and
 * stack per-expert tensors into the canonical fused stacks (gate rows then up rows for w13).
 */
final class ExpertTensors {
    static final System.Logger LOG = System.getLogger("io.moe4j.quant");
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final long ALIGN = 64;

    private ExpertTensors() {
    }

    // ------------------------------------------------------------------------------------------------ experts

    /** Global ids of the experts to hold, in local order; fails naming a bad id. */
    static int[] localIds(MoeLayerConfig layer, LoadOptions options) {
        int e = layer.numExperts();
        if (options == null || options.holdsAll()) {
            int[] all = new int[e];
            Arrays.setAll(all, i -> i);
            return all;
        }
        int[] ids = options.localExperts().clone();
        if (ids.length == 0) {
            throw new MoeException("layer " + layer.layer() + ": expert parallelism was asked to hold no experts");
        }
        boolean[] seen = new boolean[e];
        for (int id : ids) {
            if (id < 0 || id >= e) {
                throw new MoeException("layer " + layer.layer() + ": local expert " + id + " is out of range (the layer has "
                        + e + " experts)");
            }
            if (seen[id]) {
                throw new MoeException("layer " + layer.layer() + ": local expert " + id + " is listed twice");
            }
            seen[id] = true;
        }
        return ids;
    }

    /** A stack whose shards (gate, up, down of each expert) each have one per-tensor scale, kept exact per shard. */
    static ExpertMatrix perTensorScaled(int experts, int rows, int shardRows, int cols, CodeType codes,
                                        MemorySegment data, List<Tensor> scales) {
        float[] shard = new float[scales.size()];
        for (int i = 0; i < shard.length; i++) {
            shard[i] = scalar(scales.get(i));
        }
        return new ExpertMatrix(experts, rows, cols, codes, data, null, null, shard, shardRows, null);
    }

    /** A stack with one float scale per output row (per-channel weights). */
    static ExpertMatrix perChannelScaled(int experts, int rows, int cols, CodeType codes, MemorySegment data,
                                         List<Tensor> scales, Arena arena, Progress progress) {
        BlockScales bs = new BlockScales(ScaleType.F32, toF32(arena, scales, progress), 1, cols, rows, 1);
        return new ExpertMatrix(experts, rows, cols, codes, data, bs, null, null, 0, null);
    }

    /** The canonical weights of a per-expert family's layer without biases, its experts held as {@code ids}. */
    static ExpertWeights unbiasedWeights(QuantScheme scheme, MoeLayerConfig layer, LoadOptions options, int[] ids,
                                         ExpertMatrix w13, ExpertMatrix w2, ActivationQuant a13, ActivationQuant a2) {
        return new ExpertWeights(scheme, ids.length, layer.hidden(), layer.intermediate(), w13, w2, null, null,
                layer.gateLayout(), layer.activation(), layer.swigluLimit(), a13, a2, expertMap(layer, options, ids));
    }

    /** Global → local map (−1 where the expert lives elsewhere), or null when every expert is held. */
    static int[] expertMap(MoeLayerConfig layer, LoadOptions options, int[] ids) {
        if (options == null || options.holdsAll()) {
            return null;
        }
        int[] map = new int[layer.numExperts()];
        Arrays.fill(map, -1);
        for (int i = 0; i < ids.length; i++) {
            map[ids[i]] = i;
        }
        return map;
    }

    /** The first id when ids is a run first, first+1, ...; else −1. */
    static int contiguousStart(int[] ids) {
        for (int i = 1; i < ids.length; i++) {
            if (ids[i] != ids[0] + i) {
                return -1;
            }
        }
        return ids[0];
    }

    // ------------------------------------------------------------------------------------------------ shapes

    /** The projections stacked into w13: gate then up, or up alone for a non-gated activation. */
    static List<Projection> w13Projections(MoeLayerConfig layer) {
        return layer.gateLayout() == GateLayout.NONE ? List.of(Projection.UP) : List.of(Projection.GATE, Projection.UP);
    }

    static int w13Rows(MoeLayerConfig layer) {
        return w13Projections(layer).size() * layer.intermediate();
    }

    /** Output features of one expert's projection. */
    static int rows(MoeLayerConfig layer, Projection p) {
        return p == Projection.DOWN ? layer.hidden() : layer.intermediate();
    }

    /** Input features of one expert's projection. */
    static int cols(MoeLayerConfig layer, Projection p) {
        return p == Projection.DOWN ? layer.intermediate() : layer.hidden();
    }

    static String name(MoeLayerConfig layer, int expert, Projection p, String suffix) {
        return layer.experts().tensor(expert, p, suffix);
    }

    /** Methods that read per-expert modules refuse the fused-tensor families with a message that says so. */
    static void requirePerExpert(MoeLayerConfig layer, String scheme) {
        if (layer.experts().fused()) {
            throw new MoeException("layer " + layer.layer() + ": " + scheme + " checkpoints are read from per-expert modules ("
                    + "experts.<e>.<proj>.*), but " + layer.family().modelType() + " keeps its experts in fused tensors ("
                    + layer.experts().fusedTensor("gate_up_proj") + "); this combination is not supported");
        }
    }

    // ------------------------------------------------------------------------------------------------ checks

    static CodeType codeType(DType d) {
        return switch (d) {
            case BF16 -> CodeType.BF16;
            case F16 -> CodeType.F16;
            case F32 -> CodeType.F32;
            default -> throw new IllegalArgumentException(d + " is not an unquantized weight dtype");
        };
    }

    static WeightFormat weightFormat(CodeType c) {
        return switch (c) {
            case BF16 -> WeightFormat.BF16;
            case F16 -> WeightFormat.F16;
            case F32 -> WeightFormat.F32;
            default -> throw new IllegalArgumentException(c + " is not an unquantized weight format");
        };
    }

    static DType dtype(WeightFormat w) {
        return switch (w) {
            case BF16 -> DType.BF16;
            case F16 -> DType.F16;
            case F32 -> DType.F32;
            default -> throw new IllegalArgumentException(w + " is not an unquantized weight format");
        };
    }

    // ------------------------------------------------------------------------------------------------ loading

    /**
     * Resolves tensor {@code suffix} of every local expert's projections (in order: expert by expert, projections in
     * the order given), checking each with {@code check}. Fails on the first missing or mis-shaped tensor.
     */
    static List<Tensor> perExpert(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                  String suffix, ProjectionCheck check) {
        List<Tensor> out = new ArrayList<>(ids.length * projections.size());
        for (int id : ids) {
            for (Projection p : projections) {
                out.add(check.check(ckpt.tensor(name(layer, id, p, suffix)), p));
            }
        }
        return out;
    }

    /** Checks one projection's tensor; returns it. */
    @FunctionalInterface
    interface ProjectionCheck {
        Tensor check(Tensor t, Projection p);
    }

    /** Concatenates the tensors' bytes into one segment of the arena. */
    static MemorySegment concat(Arena arena, List<Tensor> parts, Progress progress) {
        long total = 0;
        for (Tensor t : parts) {
            total += t.segment().byteSize();
        }
        MemorySegment out = arena.allocate(total, ALIGN);
        long at = 0;
        for (Tensor t : parts) {
            long n = t.segment().byteSize();
            MemorySegment.copy(t.segment(), 0, out, at, n);
            at += n;
            progress.add(n);
        }
        return out;
    }

    /** Rows of a stacked [E, ...] tensor for the local experts: a zero-copy slice when they are contiguous. */
    static MemorySegment selectExperts(Tensor stacked, int[] ids, Arena arena, Progress progress) {
        long perExpert = stacked.segment().byteSize() / stacked.shape()[0];
        int start = contiguousStart(ids);
        if (start >= 0) {
            MemorySegment s = stacked.segment().asSlice(start * perExpert, ids.length * perExpert);
            progress.add(s.byteSize());
            return s;
        }
        MemorySegment out = arena.allocate(perExpert * ids.length, ALIGN);
        for (int i = 0; i < ids.length; i++) {
            MemorySegment.copy(stacked.segment(), ids[i] * perExpert, out, i * perExpert, perExpert);
            progress.add(perExpert);
        }
        return out;
    }

    /** Float elements of the tensors (BF16, F16, F32), concatenated into a float32 segment of the arena. */
    static MemorySegment toF32(Arena arena, List<Tensor> parts, Progress progress) {
        long total = 0;
        for (Tensor t : parts) {
            total += t.elementCount();
        }
        MemorySegment out = arena.allocate(total * 4, ALIGN);
        long at = 0;
        for (Tensor t : parts) {
            long n = t.elementCount();
            if (t.dtype() == DType.F32) {
                MemorySegment.copy(t.segment(), 0, out, at * 4, n * 4);
            } else {
                for (long i = 0; i < n; i++) {
                    out.set(F32, (at + i) * 4, t.getFloat(i));
                }
            }
            at += n;
            progress.add(t.segment().byteSize());
        }
        return out;
    }

    /** Rows of a stacked [E, n] float tensor for the local experts, as float32. */
    static float[] expertRows(Tensor stacked, int[] ids) {
        int n = Math.toIntExact(stacked.elementCount() / stacked.shape()[0]);
        float[] out = new float[ids.length * n];
        for (int i = 0; i < ids.length; i++) {
            for (int j = 0; j < n; j++) {
                out[i * n + j] = stacked.getFloat((long) ids[i] * n + j);
            }
        }
        return out;
    }

    /**
     * A stack of sub-byte packed codes with one byte scale per {@code blockCols} elements of a row (OCP MX, NVFP4):
     * per projection, tensor {@code codeSuffix} U8 [rows, packed cols] and {@code scaleSuffix} [rows, cols / blockCols],
     * concatenated expert by expert.
     */
    static ExpertMatrix stackPackedWithByteScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids,
                                                  List<Projection> projections, CodeType codes, String codeSuffix,
                                                  ScaleType scaleType, String scaleSuffix, DType[] scaleDtypes,
                                                  int blockCols, float[] shardScales, int shardRows, Arena arena,
                                                  Progress progress) {
        Projection p0 = projections.get(0);
        int rows = rows(layer, p0);
        int cols = cols(layer, p0);
        if (cols % blockCols != 0) {
            throw new MoeException("layer " + layer.layer() + ": " + codes + " weights need the input size of "
                    + p0.name().toLowerCase(java.util.Locale.ROOT) + " (" + cols + ") to be a multiple of " + blockCols);
        }
        long packed = codes.rowBytes(cols);
        List<Tensor> code = perExpert(ckpt, layer, ids, projections, codeSuffix,
                (t, p) -> expect(t, new long[]{rows, packed}, DType.U8));
        List<Tensor> scale = perExpert(ckpt, layer, ids, projections, scaleSuffix,
                (t, p) -> expect(t, new long[]{rows, cols / blockCols}, scaleDtypes));
        int total = rows * projections.size();
        return new ExpertMatrix(ids.length, total, cols, codes, concat(arena, code, progress),
                new BlockScales(scaleType, concat(arena, scale, progress), 1, blockCols, total, cols / blockCols),
                null, shardScales, shardRows, null);
    }

    /**
     * Static activation scales: tensor {@code suffix} (a scalar) of each local expert's projections, as
     * [local expert][projection]. A missing one fails with the seed's message and the tensor's name.
     */
    static float[][] staticScales(Checkpoint ckpt, MoeLayerConfig layer, int[] ids, List<Projection> projections,
                                  String suffix) {
        float[][] out = new float[ids.length][projections.size()];
        for (int k = 0; k < ids.length; k++) {
            for (int j = 0; j < projections.size(); j++) {
                String name = name(layer, ids[k], projections.get(j), suffix);
                Tensor t = ckpt.find(name).orElseThrow(() -> new MoeException(
                        "QuantConfig has static quantization, but found activation scales are None: tensor '" + name
                                + "' is missing from " + ckpt.root()));
                out[k][j] = scalar(t);
            }
        }
        return out;
    }

    /**
     * The seeds' post-load rule for static input scales: one scale for the layer, the maximum over the local experts
     * (and over gate and up for w13), with the seed's warning when they differ. Returned per local expert.
     */
    static float[] collapseToMax(float[][] perExpert, String kind) {
        int per = perExpert[0].length;
        float[] flat = new float[perExpert.length * per];
        for (int k = 0; k < perExpert.length; k++) {
            System.arraycopy(perExpert[k], 0, flat, k * per, per);
        }
        if (!allClose(flat)) {
            LOG.log(System.Logger.Level.WARNING, "Found input_scales that are not equal for " + kind
                    + " MoE layer. Using the maximum across experts for each layer.");
        }
        return filled(perExpert.length, max(flat));
    }

    // ------------------------------------------------------------------------------------------------ post-load rules

    /** torch.allclose(x, x[0]) with its default tolerances (rtol 1e-5, atol 1e-8), vLLM's all_close_1d. */
    static boolean allClose(float[] v) {
        for (float x : v) {
            if (Math.abs(x - v[0]) > 1e-8 + 1e-5 * Math.abs(v[0])) {
                return false;
            }
        }
        return true;
    }

    static float max(float[] v) {
        float m = Float.NEGATIVE_INFINITY;
        for (float x : v) {
            m = Math.max(m, x);
        }
        return m;
    }

    static float min(float[] v) {
        float m = Float.POSITIVE_INFINITY;
        for (float x : v) {
            m = Math.min(m, x);
        }
        return m;
    }

    /** An array of n copies of x (per-local-expert static scales after a collapse). */
    static float[] filled(int n, float x) {
        float[] out = new float[n];
        Arrays.fill(out, x);
        return out;
    }

    static List<ExpectedTensor> expected(MoeLayerConfig layer, List<Projection> projections, String suffix,
                                             DType dtype, Function<Projection, long[]> shape) {
        List<ExpectedTensor> out = new ArrayList<>();
        for (int e = 0; e < layer.numExperts(); e++) {
            for (Projection p : projections) {
                out.add(new ExpectedTensor(name(layer, e, p, suffix), dtype, shape.apply(p)));
            }
        }
        return out;
    }

    static List<Projection> all(MoeLayerConfig layer) {
        List<Projection> p = new ArrayList<>(w13Projections(layer));
        p.add(Projection.DOWN);
        return p;
    }

    /** Bytes loaded so far, reported to {@link LoadOptions#progress()}. */
    static final class Progress {
        private final LoadOptions options;
        private long done;

        Progress(LoadOptions options) {
            this.options = options;
        }

        void add(long bytes) {
            done += bytes;
            if (options != null && options.progress() != null) {
                options.progress().accept(done);
            }
        }
    }
}

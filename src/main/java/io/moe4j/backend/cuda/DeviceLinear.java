package io.moe4j.backend.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.backend.cuda.driver.KernelArgs;
import io.moe4j.quant.ActivationQuant;
import io.moe4j.quant.CodeType;
import io.moe4j.quant.ExpertMatrix;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.MatrixDequantizer;
import io.moe4j.quant.RowStack;
import io.moe4j.quant.WeightFormat;

import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;

/**
 * One dense linear of a model resident on the GPU (an attention projection, a dense MLP projection, {@code lm_head}),
 * y = qdq(x) · Wᵀ (+ bias), with W in the checkpoint's own format: the expert kernels serve it as a stack of one.
 * Codes stay packed ({@link UnitMatrix}: the checkpoint's rows padded to 32-element units), the input goes through
 * the scheme's quantize-dequantize ({@link DeviceQuant}, the row stage of the experts) and the CUDA-core GEMM
 * ({@code moe_gemm_units}) decodes the codes in registers. A bf16 matrix whose rows are whole units and whose input is
 * not quantized also runs on {@code model_linear_bf16} (one warp a row; tensor cores from 4 tokens), the faster path
 * for the bf16 attention and {@code lm_head} most checkpoints ship.
 *
 * <p>Made by {@link #upload}; run by {@link ModelOps#linear}. Closing frees its device memory.
 */
public final class DeviceLinear implements AutoCloseable {
    private final String module;
    private final UnitMatrix matrix;
    private final DeviceQuant input;
    private final DeviceBuffer bias;
    private final boolean bf16Rows;
    private final String scheme;

    private DeviceLinear(String module, UnitMatrix matrix, DeviceQuant input, DeviceBuffer bias, String scheme,
            boolean bf16Rows) {
        this.module = module;
        this.matrix = matrix;
        this.input = input;
        this.bias = bias;
        this.scheme = scheme;
        this.bf16Rows = bf16Rows;
    }

    /**
     * Uploads {@code w} (and {@code bias}, float32 [out], or null) of the module named {@code module}; fails naming
     * the module when the device kernels cannot run its layout or this device its format.
     */
    public static DeviceLinear upload(ModelOps ops, String module, LinearWeights w, float[] bias) {
        return upload(ops, module, w.weight(), w, bias);
    }

    /**
     * Several linears that read the same input, as one: their weights stacked by rows in the order given (e.g. q, k
     * and v; {@link RowStack}), their biases likewise (all or none), so that one input preparation and one launch serve
     * them all. The caller checks {@link #stacks}.
     */
    public static DeviceLinear stack(ModelOps ops, String module, List<LinearWeights> parts, List<float[]> biases) {
        if (!stacks(parts)) {
            throw new IllegalArgumentException(module + ": these linears do not stack: "
                    + (sameInput(parts) ? RowStack.unsupportedReason(weights(parts)) : "different input rules"));
        }
        int rows = parts.stream().mapToInt(LinearWeights::outFeatures).sum();
        try (Arena arena = Arena.ofConfined()) {
            float[] b = null;
            if (biases.stream().anyMatch(x -> x != null)) {
                b = new float[rows];
                int o = 0;
                for (int i = 0; i < parts.size(); i++) {
                    float[] part = biases.get(i);
                    if (part == null) {
                        throw new IllegalArgumentException(module + ": some stacked linears have biases, others not");
                    }
                    System.arraycopy(part, 0, b, o, part.length);
                    o += part.length;
                }
            }
            ExpertMatrix m = RowStack.of(arena, weights(parts));
            return upload(ops, module, m, parts.getFirst(), b);
        }
    }

    /**
     * Whether {@link #stack} takes these linears: one input rule (the same quantization, static scales included) and
     * weights {@link RowStack} stacks (one input width, code type and block-scale grid, no act-order).
     */
    public static boolean stacks(List<LinearWeights> parts) {
        return sameInput(parts) && RowStack.unsupportedReason(weights(parts)) == null;
    }

    private static boolean sameInput(List<LinearWeights> parts) {
        ActivationQuant first = parts.getFirst().input();
        return parts.stream().allMatch(p -> ActivationQuant.sameRule(first, p.input()));
    }

    private static List<ExpertMatrix> weights(List<LinearWeights> parts) {
        return parts.stream().map(LinearWeights::weight).toList();
    }

    private static boolean plainBf16(ExpertMatrix m) {
        return m.codes() == CodeType.BF16 && m.blockScales() == null && m.shardScales() == null
                && m.zeroPoints() == null && m.groupIndex() == null;
    }

    private static DeviceLinear upload(ModelOps ops, String module, ExpertMatrix m, LinearWeights w, float[] bias) {
        String reason = UnitMatrix.unsupportedReason(m);
        if (reason == null) {
            reason = deviceReason(w.scheme().weights(), ops);
        }
        if (reason != null) {
            throw new MoeException("unsupported on cuda: linear '" + module + "' (" + w.scheme().name() + "): "
                    + reason);
        }
        if (bias != null && bias.length != m.rows()) {
            throw new IllegalArgumentException(module + ": bias of " + bias.length + " for " + m.rows() + " rows");
        }
        List<AutoCloseable> made = new ArrayList<>();
        try {
            ops.context().makeCurrent();
            UnitMatrix u = UnitMatrix.upload(ops.context(), m);
            made.add(u);
            DeviceQuant q = DeviceQuant.upload(ops.context(), w.input());
            made.add(q);
            DeviceBuffer b = bias == null ? null : ops.upload(bias);
            // model_linear_bf16 reads rows of `in` bf16 values back to back: plain bf16 rows of whole units
            boolean bf16Rows = plainBf16(m) && w.input().equals(ActivationQuant.NONE) && m.cols() % 32 == 0;
            return new DeviceLinear(module, u, q, b, w.scheme().name(), bf16Rows);
        } catch (RuntimeException e) {
            for (AutoCloseable c : made) {
                try {
                    c.close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** The cuda backend's rule for a weight format on this device (FP8 and NVFP4 decode in hardware from sm_89). */
    private static String deviceReason(WeightFormat weights, ModelOps ops) {
        var device = ops.context().device();
        var support = CudaBackend.support(weights, device.computeCapability(), device.name());
        return support.supported() ? null : support.reason();
    }

    public int inFeatures() {
        return matrix.cols();
    }

    public int outFeatures() {
        return matrix.rows();
    }

    /** Whether x is rewritten (quantize-dequantized, or its columns reordered) before the GEMM reads it. */
    boolean preparesInput() {
        return !input.none() || matrix.columnOrder() != null;
    }

    /**
     * Whether a norm kernel may apply this linear's input rule to rows of {@code n} values as it writes them
     * ({@link ModelOps#rmsNormForLinear}): a quantize-dequantize to apply, no column order, rows the norm holds in
     * registers. The linear is then enqueued with its input prepared.
     */
    public boolean normPreparesInput(int n) {
        return kernelsPrepareInput() && matrix.cols() == n && ModelOps.normHolds(n);
    }

    /**
     * Whether the attention kernel may apply this linear's input rule to each head of {@code headDim} values as it
     * writes it ({@link ModelOps#attendRows} with this linear as {@code next}): a quantize-dequantize whose groups lie
     * within a head (FP8 groups of 128 with heads of 128, as Qwen3's hub FP8 o_proj; MX, NVFP4, static scales), no
     * column order.
     */
    public boolean headsPrepareInput(int headDim) {
        return kernelsPrepareInput() && matrix.cols() % headDim == 0 && input.localTo(headDim);
    }

    /**
     * Whether a kernel ahead of this linear may take its input through the input rule ({@link #normPreparesInput},
     * {@link #headsPrepareInput}): a quantize-dequantize to apply and no column order (the unit kernels read x as
     * it is; the bf16 ones take no rule).
     */
    boolean kernelsPrepareInput() {
        return !bf16Rows && !input.none() && matrix.columnOrder() == null;
    }

    /** Appends this linear's input rule as a kernel's Qdq arguments (kind, element, group, scales, zero points). */
    KernelArgs appendInputRule(KernelArgs args) {
        return input.append(args);
    }

    /** For logs: the format and the kernel, e.g. {@code bf16 on model_linear_bf16}. */
    public String describe() {
        return scheme + (bf16Rows ? " on model_linear_bf16" : ", " + matrix.kernels());
    }

    /**
     * Enqueues y [tokens, out] (rows {@code yPitch} floats apart) = qdq(x [tokens, in]) · Wᵀ + bias on {@code ops}'
     * stream, added to y's values when {@code accumulate}. {@code rows}: device memory of at least
     * {@link #inputScratchBytes} for the prepared input; {@code partials}: the bf16 kernels' slice sums (0 for none).
     * {@code prepared}: x already went through the input rule ({@link #normPreparesInput}).
     */
    void enqueue(ModelOps ops, CudaEngine engine, CudaTuning tuning, long x, long y, int yPitch, int tokens,
            boolean accumulate, long rows, long rowsBytes, long partials, long partialsBytes,
            boolean prepared) {
        int in = matrix.cols();
        int out = matrix.rows();
        if (yPitch < out) {
            throw new IllegalArgumentException(module + ": output rows of " + yPitch + " floats for " + out + " values");
        }
        if (tokens == 0) {
            return;
        }
        if (bf16Rows && yPitch == out) {
            ops.linearBf16(x, matrix.codes().pointer(), bias == null ? 0L : bias.pointer(), y, tokens, in, out,
                    accumulate, partials, partialsBytes);
            return;
        }
        long source = prepared ? x : prepareInput(ops, engine, x, tokens, rows, rowsBytes);
        // Tokens a block multiplies with each decoded weight unit: up to 8, as the experts take pairs.
        int tb = matrix.batchSize(engine, tuning, tokens > 1 ? 8 : 1);
        UnitMatrix.Product product = matrix.product(engine, tuning, tb);
        if (product.shared() > product.kernel().sharedLimit()) {
            throw new IllegalArgumentException(module + ": rows of " + in + " values need " + product.shared()
                    + " bytes of shared memory; this device allows " + product.kernel().sharedLimit());
        }
        int batches = Math.ceilDiv(tokens, tb);
        if (batches > 65535) {
            throw new IllegalArgumentException(module + ": " + tokens + " tokens in one call exceed the grid");
        }
        try (Arena arena = Arena.ofConfined()) {
            // no batches and no xRows: batch y is entries y·tb.. of the tokens, entry i reading x row i
            KernelArgs args = matrix.gemmArgs(new KernelArgs(arena), source, 0L, 0L, y).i32(yPitch)
                    .pointer(bias == null ? 0L : bias.pointer()).i32(accumulate ? 1 : 0).i32(tokens);
            product.launch(out, batches, args, false, ops.stream()); // no batches to read
        }
    }

    /**
     * Enqueues the input rule of this linear on x [tokens, in]: the scheme's quantize-dequantize and the weights'
     * column order, into {@code rows}; returns what the GEMM reads (x itself when the input goes in as it is).
     */
    long prepareInput(ModelOps ops, CudaEngine engine, long x, int tokens, long rows, long rowsBytes) {
        if (!preparesInput() || tokens == 0) {
            return x;
        }
        int in = matrix.cols();
        if (rowsBytes < inputScratchBytes(tokens)) {
            throw new IllegalArgumentException(module + ": " + rowsBytes + " bytes of input scratch for " + tokens
                    + " rows of " + in);
        }
        KernelCache.Kernel k = engine.kernels().get("moe_rows.cu", "moe_prepare_rows", List.of());
        int shared = 4 * (in + 32);
        if (shared > k.sharedLimit()) {
            throw new IllegalArgumentException(module + ": input rows of " + in + " values need " + shared
                    + " bytes of shared memory; this device allows " + k.sharedLimit());
        }
        try (Arena arena = Arena.ofConfined()) {
            KernelArgs args = new KernelArgs(arena).pointer(x).i32(in).pointer(0L).pointer(0L).pointer(0L).i32(0);
            input.append(args);
            args.pointer(CudaExperts.pointerOf(matrix.columnOrder())).i32(0).pointer(rows).pointer(0L).pointer(0L)
                    .i32(in);
            // a decode step's row takes the most threads a block may have, as the experts' rows do
            int threads = CudaExperts.rowThreads(k, tokens, ops.context().device().multiprocessors());
            k.function().launch(tokens, 1, 1, threads, 1, 1, shared, ops.stream(), args);
        }
        return rows;
    }

    /**
     * {@code w}'s weight as float32 rows [out, in] (as the checkpoint dequantizes it), its columns in the order
     * {@link #prepareInput} writes the input in (act-order weights sort their columns by group): so that
     * prepared input · these rows is this linear's product. For products the device kernels take apart, such as
     * latent attention's kv_b_proj taken into each query and output.
     */
    public static float[] denseRows(LinearWeights w) {
        ExpertMatrix m = w.weight();
        int in = m.cols();
        int out = m.rows();
        int[] order = m.groupIndex() == null ? null : ActOrder.sortedColumns(m.groupIndex()[0]);
        float[] dense = new float[Math.multiplyExact(in, out)];
        float[] row = new float[in];
        for (int r = 0; r < out; r++) {
            MatrixDequantizer.row(m, 0, r, row);
            for (int c = 0; c < in; c++) {
                dense[r * in + c] = row[order == null ? c : order[c]];
            }
        }
        return dense;
    }

    /** Device bytes of the prepared input rows of {@code tokens} tokens (0 when x is read as it is). */
    public long inputScratchBytes(int tokens) {
        return preparesInput() ? 4L * tokens * matrix.cols() : 0L;
    }

    @Override
    public void close() {
        matrix.close();
        input.close();
        if (bias != null) {
            bias.close();
        }
    }
}

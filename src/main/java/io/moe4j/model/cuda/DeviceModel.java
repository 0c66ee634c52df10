package io.moe4j.model.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.DeviceLinear;
import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.layer.SharedExperts;
import io.moe4j.model.AttentionWindow;
import io.moe4j.model.DecoderConfig;
import io.moe4j.model.DecoderRuntime;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.LayerSpec;
import io.moe4j.model.MlaSpec;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Rope;
import io.moe4j.model.SequenceState;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;
import io.moe4j.model.linear.LinearBias;
import io.moe4j.quant.LinearMethod;
import io.moe4j.quant.LinearWeights;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.routing.Router;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A decoder resident on the GPU: every weight uploaded once in the checkpoint's own format (each dense linear a
 * {@link DeviceLinear}, the experts packed by the cuda backend), the KV caches on the device ({@link DeviceSequence});
 * a forward pass moves only token ids and position tables in and logits (or a greedy id) out.
 *
 * <p>What runs: the five families' decoders as the host runs them. Grouped-query attention with biases, sinks, q/k
 * RMSNorm (Qwen3), L2 q/k norm, NoPE layers and temperature tuning (Llama-4), full, sliding and chunked windows, any
 * RoPE scaling the host {@link Rope} computes; DeepSeek's multi-head latent attention; MoE layers with or without
 * shared experts, and dense MLPs. What does not ({@link #unsupported}: partial rotary, heads wider than the device
 * attention) is refused by name at load, never run on the host instead.
 */
public final class DeviceModel implements DecoderRuntime {

    /** One layer: its norms' weights (float32), attention and feed-forward. */
    record Layer(int index, DeviceBuffer inputNorm, DeviceBuffer postNorm, AttentionBlock attention,
                 FeedForwardBlock feedForward) {
        /** Floats a position takes in this layer's cache. */
        int cacheWidth() {
            return attention.cacheWidth();
        }
    }

    /** A layer's attention on the device. */
    sealed interface AttentionBlock permits Gqa, Mla {
        int cacheWidth();
    }

    /**
     * Grouped-query attention. q, k and v are one linear ({@code qkv}, their rows stacked) when they share an input
     * rule and a weight layout ({@link DeviceLinear#stacks}); otherwise three ({@code q}, {@code k}, {@code v})
     * writing into the same fused rows.
     *
     * @param window     sliding window size (> 0), minus the chunk size (< 0), or 0 for full attention
     * @param qNorm      Qwen3's per-head q_norm weight (float32 [headDim]) or null; kNorm likewise
     * @param rope       null on a NoPE layer
     * @param temperature Llama-4's {floorScale, attnScale}, or null
     */
    record Gqa(GqaSpec spec, int window, DeviceLinear qkv, DeviceLinear q, DeviceLinear k, DeviceLinear v,
               DeviceLinear o, DeviceBuffer qNorm, DeviceBuffer kNorm, DeviceBuffer sinks, RopeTables rope,
               double[] temperature) implements AttentionBlock {
        @Override
        public int cacheWidth() {
            return 2 * spec.kvHeads() * spec.headDim();
        }

        int qkvWidth() {
            return (spec.heads() + 2 * spec.kvHeads()) * spec.headDim();
        }

        ModelOps.QkNormMode normMode() {
            return switch (spec.qkNorm()) {
                case NONE -> ModelOps.QkNormMode.NONE;
                case RMS -> ModelOps.QkNormMode.WEIGHTED_BEFORE_ROPE;
                case L2 -> ModelOps.QkNormMode.PLAIN_AFTER_ROPE;
            };
        }
    }

    /**
     * DeepSeek's multi-head latent attention. The cache keeps, per position, the rotated rope key and the normalized
     * latent as kv_b_proj reads it (after its scheme's quantize-dequantize and column order): [rope | kv_lora_rank],
     * as the host decoder caches it. Attention takes kv_b_proj into each query and output
     * ({@code model_attend_latent_rows} over {@code kvBRows}, the weight as float32 rows), so no position is ever
     * expanded and the cache stays latent-sized (for DeepSeek-V3 576 floats a position and layer, against 32,832
     * expanded).
     *
     * @param qA      null when the query has no low-rank path ({@code qB} is then q_proj), or when {@code qAkvA}
     *                runs it
     * @param kvA     kv_a_proj_with_mqa, or null when {@code qAkvA} runs it
     * @param qAkvA   q_a_proj and kv_a_proj_with_mqa as one linear (their rows stacked: [q_lora_rank | kv_lora_rank
     *                + rope] a token) where they share an input rule and a layout ({@link DeviceLinear#stacks}),
     *                else null
     * @param kvB     kv_b_proj, run only for its input rule ({@link ModelOps#linearInput})
     * @param kvBRows kv_b_proj as float32 rows [heads · (nope + v), kv_lora_rank] ({@link DeviceLinear#denseRows})
     */
    record Mla(MlaSpec spec, DeviceLinear qA, DeviceBuffer qANorm, DeviceLinear qB, DeviceLinear kvA,
               DeviceLinear qAkvA, DeviceBuffer kvANorm, DeviceLinear kvB, DeviceBuffer kvBRows, DeviceLinear o,
               RopeTables rope) implements AttentionBlock {
        @Override
        public int cacheWidth() {
            return spec.ropeDim() + spec.kvLoraRank();
        }

        /** The width of a token's q_a|kv_a row ({@code qAkvA}'s output). */
        int stackedWidth() {
            return spec.qLoraRank() + spec.kvLoraRank() + spec.ropeDim();
        }
    }

    /** A layer's feed-forward on the device. */
    sealed interface FeedForwardBlock permits Moe, Dense {
    }

    /** A MoE layer: the router's weights (float32) beside the layer engine's experts, routed and shared. */
    record Moe(MoeLayer layer, DeviceBuffer routerWeight, DeviceBuffer routerBias, DeviceBuffer routerCorrection)
            implements FeedForwardBlock {
        boolean hasShared() {
            return layer.sharedExperts() != null;
        }
    }

    /** A dense SwiGLU MLP: down(silu(gate(x)) · up(x)). */
    record Dense(DeviceLinear gate, DeviceLinear up, DeviceLinear down) implements FeedForwardBlock {
    }

    /** cos and sin [position, dim / 2] of one RoPE for every position a session may reach. */
    record RopeTables(DeviceBuffer cos, DeviceBuffer sin, int half, boolean interleaved) {
    }

    private final DecoderConfig config;
    private final ModelOps ops;
    private final int contextLimit;
    private final List<Layer> layers;
    private final DeviceBuffer embedding;
    private final DeviceBuffer finalNorm;
    /** lm_head, or null when it is the embedding table (tied). */
    private final DeviceLinear lmHead;
    private final List<AutoCloseable> owned;
    /** Whether every MoE layer routes on the device (ModelOps.routesOnDevice): then passes need no host round trip. */
    private final boolean routesOnDevice;
    private final Widths widths;
    /** This model's rank of an expert-parallel model, or null when it holds every expert. */
    private final ExpertShard shard;
    /** The runner of batched steps, made on the first one. */
    private DeviceBatch batch;

    private DeviceModel(DecoderConfig config, ModelOps ops, int contextLimit, List<Layer> layers, DeviceBuffer embedding,
                        DeviceBuffer finalNorm, DeviceLinear lmHead, List<AutoCloseable> owned, boolean routesOnDevice,
                        ExpertShard shard) {
        this.routesOnDevice = routesOnDevice;
        this.shard = shard;
        this.config = config;
        this.ops = ops;
        this.contextLimit = contextLimit;
        this.layers = layers;
        this.embedding = embedding;
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
        this.owned = owned;
        this.widths = Widths.of(config, layers, lmHead);
    }

    /** Why this decoder cannot run on the device, or empty when it can (formats are checked as they load). */
    public static Optional<String> unsupported(DecoderConfig config) {
        for (LayerSpec spec : config.layers()) {
            String where = "layer " + spec.index() + " of " + config.family().modelType();
            switch (spec.attention()) {
                case GqaSpec g -> {
                    if (g.rope() != null && g.rope().dim() != g.headDim()) {
                        return Optional.of(where + ": partial rotary (" + g.rope().dim() + " of " + g.headDim() + ")");
                    }
                    if (g.headDim() > ModelOps.HEAD_DIM_MAX || g.headDim() % 4 != 0) {
                        return Optional.of(where + ": head_dim " + g.headDim() + " (the device attention takes"
                                + " multiples of 4 up to " + ModelOps.HEAD_DIM_MAX + ")");
                    }
                    if (g.heads() % g.kvHeads() != 0 || g.heads() / g.kvHeads() > ModelOps.GQA_GROUP_MAX) {
                        return Optional.of(where + ": " + g.heads() + " heads over " + g.kvHeads() + " kv heads (the"
                                + " device attention takes up to " + ModelOps.GQA_GROUP_MAX + " query heads a kv head)");
                    }
                }
                case MlaSpec m -> {
                    if (m.kvLoraRank() > ModelOps.LATENT_MAX || m.ropeDim() > ModelOps.LATENT_ROPE_MAX
                            || m.nopeDim() > ModelOps.HEAD_DIM_MAX) {
                        return Optional.of(where + ": latent attention of kv_lora_rank " + m.kvLoraRank()
                                + ", qk_rope_head_dim " + m.ropeDim() + ", qk_nope_head_dim " + m.nopeDim()
                                + " (the device attention takes up to " + ModelOps.LATENT_MAX + ", "
                                + ModelOps.LATENT_ROPE_MAX + ", " + ModelOps.HEAD_DIM_MAX + ")");
                    }
                    if (m.ropeDim() % 2 != 0) {
                        return Optional.of(where + ": odd qk_rope_head_dim " + m.ropeDim());
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** Uploads the model; fails with "unsupported on cuda: ..." for what the device decoder does not run. */
    public static DeviceModel load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options, int contextLimit) {
        return load(config, checkpoint, options, contextLimit, null);
    }

    /**
     * Uploads the model onto {@code shard}'s device holding only its slice of every MoE layer's routed experts (and
     * all shared experts: each rank adds them to its own rows), or onto device 0 with every expert when null.
     */
    static DeviceModel load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options, int contextLimit,
                            ExpertShard shard) {
        Optional<String> why = unsupported(config);
        if (why.isPresent()) {
            throw new MoeException(checkpoint.root() + ": unsupported on cuda: " + why.get());
        }
        ModelOps ops = ModelOps.open(shard == null ? 0 : shard.device());
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            Uploader up = new Uploader(config, checkpoint, QuantizationConfig.of(config.model()), ops, owned, shard);
            int h = config.hidden();
            DeviceBuffer embedding = up.bf16(config.embedTokens() + ".weight", config.vocab(), h);
            Map<Rope, RopeTables> ropes = new IdentityHashMap<>();
            List<Layer> layers = new ArrayList<>();
            for (LayerSpec spec : config.layers()) {
                String p = spec.prefix();
                AttentionBlock attention = switch (spec.attention()) {
                    case GqaSpec g -> up.gqa(p + "self_attn.", g,
                            g.rope() == null ? null : ropes.computeIfAbsent(g.rope(), r -> up.rope(r, contextLimit)));
                    case MlaSpec m -> up.mla(p + "self_attn.", m,
                            ropes.computeIfAbsent(m.rope(), r -> up.rope(r, contextLimit)));
                };
                FeedForwardBlock ff = spec.isMoe() ? up.moe(spec.index(), options) : up.dense(spec.denseMlp());
                layers.add(new Layer(spec.index(), up.floats(p + "input_layernorm.weight", h),
                        up.floats(p + "post_attention_layernorm.weight", h), attention, ff));
                options.loadListener().layerLoaded(layers.size(), config.layers().size());
            }
            DeviceBuffer finalNorm = up.floats(config.finalNorm() + ".weight", h);
            DeviceLinear lmHead = config.tieEmbeddings() ? null : up.linear(config.lmHead(), h, config.vocab(), false);
            // moe4j.cuda.hostRouting=true keeps the host's selection (a bench's comparison; the default routes on the device)
            boolean routesOnDevice = !Boolean.getBoolean("moe4j.cuda.hostRouting") && layers.stream()
                    .allMatch(l -> !(l.feedForward() instanceof Moe m)
                            || ModelOps.routesOnDevice(m.layer().experts(), m.layer().router().spec()));
            return new DeviceModel(config, ops, contextLimit, List.copyOf(layers), embedding, finalNorm, lmHead, owned,
                    routesOnDevice, shard);
        } catch (RuntimeException e) {
            closeAll(owned, e);
            ops.close();
            throw e;
        }
    }

    /** Reads checkpoint tensors, checked by name, shape and dtype, into device buffers the model owns. */
    private record Uploader(DecoderConfig config, Checkpoint checkpoint, QuantizationConfig quantization, ModelOps ops,
                            List<AutoCloseable> owned, ExpertShard shard) {

        <T extends AutoCloseable> T own(T b) {
            owned.add(b);
            return b;
        }

        Gqa gqa(String a, GqaSpec g, RopeTables rope) {
            int h = config.hidden();
            int qOut = g.heads() * g.headDim();
            int kvOut = g.kvHeads() * g.headDim();
            String[] names = {a + "q_proj", a + "k_proj", a + "v_proj"};
            int[] outs = {qOut, kvOut, kvOut};
            DeviceLinear qkv = null;
            DeviceLinear[] each = new DeviceLinear[3];
            try (Arena arena = Arena.ofConfined()) {
                List<LinearWeights> weights = new ArrayList<>();
                List<float[]> biases = new ArrayList<>();
                for (int i = 0; i < 3; i++) {
                    weights.add(load(names[i], h, outs[i], arena));
                    biases.add(LinearBias.load(checkpoint, names[i], outs[i], g.bias()));
                }
                if (DeviceLinear.stacks(weights)) {
                    qkv = own(DeviceLinear.stack(ops, a + "{q,k,v}_proj", weights, biases));
                } else {
                    for (int i = 0; i < 3; i++) {
                        each[i] = own(upload(names[i], weights.get(i), biases.get(i)));
                    }
                }
            }
            DeviceBuffer qNorm = null;
            DeviceBuffer kNorm = null;
            if (g.qkNorm() == GqaSpec.QkNorm.RMS) {
                qNorm = floats(a + "q_norm.weight", g.headDim());
                kNorm = floats(a + "k_norm.weight", g.headDim());
            }
            int window = switch (g.window().kind()) {
                case FULL -> 0;
                case SLIDING -> g.window().size();
                case CHUNKED -> -g.window().size();
            };
            double[] temperature = g.temperature() == null ? null
                    : new double[] {g.temperature().floorScale(), g.temperature().attnScale()};
            return new Gqa(g, window, qkv, each[0], each[1], each[2], linear(a + "o_proj", qOut, h, g.bias()), qNorm,
                    kNorm, g.sinks() ? floats(a + "sinks", g.heads()) : null, rope, temperature);
        }

        Mla mla(String a, MlaSpec m, RopeTables rope) {
            int h = config.hidden();
            int qk = m.nopeDim() + m.ropeDim();
            DeviceLinear qA = null;
            DeviceLinear kvA = null;
            DeviceLinear qAkvA = null;
            DeviceBuffer qANorm = null;
            DeviceLinear qB;
            int latent = m.kvLoraRank() + m.ropeDim();
            if (m.qLoraRank() > 0) {
                // q_a and kv_a read the same input: one linear where they stack (one input stage and one launch)
                String[] names = {a + "q_a_proj", a + "kv_a_proj_with_mqa"};
                int[] outs = {m.qLoraRank(), latent};
                try (Arena arena = Arena.ofConfined()) {
                    List<LinearWeights> weights = new ArrayList<>();
                    List<float[]> biases = new ArrayList<>();
                    for (int i = 0; i < 2; i++) {
                        weights.add(load(names[i], h, outs[i], arena));
                        biases.add(LinearBias.load(checkpoint, names[i], outs[i], m.bias()));
                    }
                    if (stacksMlaInputs() && DeviceLinear.stacks(weights)) {
                        qAkvA = own(DeviceLinear.stack(ops, a + "{q_a,kv_a}_proj", weights, biases));
                    } else {
                        qA = own(upload(names[0], weights.get(0), biases.get(0)));
                        kvA = own(upload(names[1], weights.get(1), biases.get(1)));
                    }
                }
                qANorm = floats(a + "q_a_layernorm.weight", m.qLoraRank());
                qB = linear(a + "q_b_proj", m.qLoraRank(), m.heads() * qk, false);
            } else {
                qB = linear(a + "q_proj", h, m.heads() * qk, false);
                kvA = linear(a + "kv_a_proj_with_mqa", h, latent, m.bias());
            }
            DeviceBuffer kvANorm = floats(a + "kv_a_layernorm.weight", m.kvLoraRank());
            DeviceLinear kvB;
            DeviceBuffer kvBRows;
            try (Arena arena = Arena.ofConfined()) {
                String module = a + "kv_b_proj";
                LinearWeights w = load(module, m.kvLoraRank(), m.heads() * (m.nopeDim() + m.vDim()), arena);
                kvB = own(upload(module, w, null));
                kvBRows = own(ops.upload(DeviceLinear.denseRows(w)));
            }
            return new Mla(m, qA, qANorm, qB, kvA, qAkvA, kvANorm, kvB, kvBRows,
                    linear(a + "o_proj", m.heads() * m.vDim(), h, m.bias()), rope);
        }

        Moe moe(int index, ModelOptions options) {
            MoeLayerOptions layerOptions = MoeLayerOptions.defaults()
                    .withBackend(ModelOptions.CUDA, io.moe4j.backend.oracle.BackendChoice.MODEL)
                    .withThreads(options.threads());
            if (shard != null) {
                int experts = config.model().layer(index).numExperts();
                layerOptions = layerOptions.withDevice(shard.device()).withLocalExperts(shard.localExperts(experts))
                        .withSharedExperts(SharedExperts.ADD);
            }
            MoeLayer layer = own(MoeLayer.load(checkpoint, config.model(), index, layerOptions));
            Router router = layer.router();
            return new Moe(layer, own(ops.upload(router.weight())),
                    router.bias() == null ? null : own(ops.upload(router.bias())),
                    router.correction() == null ? null : own(ops.upload(router.correction())));
        }

        Dense dense(LayerSpec.DenseMlpSpec mlp) {
            int h = config.hidden();
            String p = mlp.module() + ".";
            return new Dense(linear(p + "gate_proj", h, mlp.intermediate(), false),
                    linear(p + "up_proj", h, mlp.intermediate(), false),
                    linear(p + "down_proj", mlp.intermediate(), h, false));
        }

        /** The linear {@code module} in the format the quantization config gives it. */
        DeviceLinear linear(String module, int in, int out, boolean bias) {
            try (Arena arena = Arena.ofConfined()) {
                LinearWeights w = load(module, in, out, arena);
                return own(upload(module, w, LinearBias.load(checkpoint, module, out, bias)));
            }
        }

        private LinearWeights load(String module, int in, int out, Arena arena) {
            LinearMethod method = quantization.linearMethod(module);
            try {
                return method.load(checkpoint, module, out, in, arena);
            } catch (IllegalArgumentException e) {
                throw new MoeException(checkpoint.root() + ": linear '" + module + "' (" + method.scheme().name()
                        + "): " + e.getMessage(), e);
            }
        }

        private DeviceLinear upload(String module, LinearWeights w, float[] bias) {
            try {
                return DeviceLinear.upload(ops, module, w, bias);
            } catch (MoeException e) {
                throw new MoeException(checkpoint.root() + ": " + e.getMessage(), e);
            }
        }

        /** A bf16 matrix as stored (the embedding table, which the device reads by rows). */
        DeviceBuffer bf16(String name, long rows, long cols) {
            Tensor t = checkpoint.tensor(name).expectShape(rows, cols);
            if (t.dtype() != DType.BF16) {
                throw new MoeException(checkpoint.root() + ": unsupported on cuda: tensor '" + name + "' has dtype "
                        + t.dtype() + "; the device decoder reads a BF16 embedding table");
            }
            return own(ops.upload(t.segment()));
        }

        /** A float vector (bf16, f16 or f32 in the checkpoint) as float32. */
        DeviceBuffer floats(String name, long n) {
            Tensor t = checkpoint.tensor(name).expectShape(n);
            if (t.dtype() != DType.BF16 && t.dtype() != DType.F16 && t.dtype() != DType.F32) {
                throw new MoeException(checkpoint.root() + ": tensor '" + name + "' has dtype " + t.dtype()
                        + "; expected BF16, F16 or F32");
            }
            return own(ops.upload(t.toFloatArray()));
        }

        /** cos/sin tables with the host Rope's float32 arithmetic ({@link RopeTable}), built a chunk at a time. */
        RopeTables rope(Rope rope, int positions) {
            int half = rope.invFreq().length;
            DeviceBuffer cos = own(ops.allocate(4L * positions * half));
            DeviceBuffer sin = own(ops.allocate(4L * positions * half));
            try (Arena arena = Arena.ofConfined()) {
                int chunk = Math.min(positions, ROPE_CHUNK);
                MemorySegment c = arena.allocate(4L * chunk * half, 4);
                MemorySegment s = arena.allocate(4L * chunk * half, 4);
                for (int from = 0; from < positions; from += chunk) {
                    int n = Math.min(chunk, positions - from);
                    RopeTable.fill(rope, from, n, c, s);
                    cos.copyFrom(c.asSlice(0, 4L * n * half), 4L * from * half);
                    sin.copyFrom(s.asSlice(0, 4L * n * half), 4L * from * half);
                }
            }
            return new RopeTables(cos, sin, half, rope.interleaved());
        }
    }

    /** Positions of a RoPE table built and uploaded at a time: the heap holds a chunk, not the whole context. */
    private static final int ROPE_CHUNK = 1 << 16;

    /** Whether q_a and kv_a load as one linear where they stack ({@code -Dmoe4j.cuda.stackMlaInputs}, default true). */
    private static boolean stacksMlaInputs() {
        return !"false".equals(System.getProperty("moe4j.cuda.stackMlaInputs"));
    }

    DecoderConfig config() {
        return config;
    }

    int contextLimit() {
        return contextLimit;
    }

    List<Layer> layers() {
        return layers;
    }

    DeviceBuffer embedding() {
        return embedding;
    }

    DeviceBuffer finalNorm() {
        return finalNorm;
    }

    /** lm_head, or null when the embedding table serves as it. */
    DeviceLinear lmHead() {
        return lmHead;
    }

    boolean routesOnDevice() {
        return routesOnDevice;
    }

    /** Ops of their own (a stream, a landing buffer) on this model's device, for a sequence or a batch's runner. */
    ModelOps openOps() {
        return ModelOps.open(ops.deviceOrdinal());
    }

    /** Makes this model's device context current on the calling thread (a rank's thread, before its work). */
    void makeCurrent() {
        ops.context().makeCurrent();
    }

    /** This model's rank of an expert-parallel model, or null when it holds every expert. */
    ExpertShard shard() {
        return shard;
    }

    /** The MoE exchange of a pass on {@code passOps} when this model is one rank of several, else null. */
    ExpertExchange newExchange(ModelOps passOps) {
        return shard == null ? null : new ExpertExchange(shard.comm(), passOps, config.hidden(), widths.experts());
    }

    Widths widths() {
        return widths;
    }

    /** The largest top-k of the MoE layers (0 for none): the routed pairs a token row brings to a layer. */
    int maxTopK() {
        int k = 0;
        for (Layer l : layers) {
            if (l.feedForward() instanceof Moe m) {
                k = Math.max(k, m.layer().router().spec().topK());
            }
        }
        return k;
    }

    /**
     * The widest rows of a pass's scratch over the layers, in floats: q|k|v (or MLA's queries), attention's output,
     * MLA's latents (and their stacked q_a|kv_a rows), a dense MLP's intermediate, router logits (experts), and the prepared input of a linear that
     * quantizes it.
     */
    record Widths(int qkv, int attended, int qLatent, int latent, int latentNormed, int stacked, int intermediate,
                  int experts, int linearInput, boolean shared) {
        static Widths of(DecoderConfig config, List<Layer> layers, DeviceLinear lmHead) {
            int qkv = 0, attended = 0, qLatent = 0, latent = 0, normed = 0, stacked = 0, inter = 0, experts = 0,
                    input = 0;
            boolean shared = false;
            List<DeviceLinear> linears = new ArrayList<>();
            for (Layer l : layers) {
                switch (l.attention()) {
                    case Gqa g -> {
                        qkv = Math.max(qkv, g.qkvWidth());
                        attended = Math.max(attended, g.spec().heads() * g.spec().headDim());
                        linears.addAll(java.util.Arrays.asList(g.qkv(), g.q(), g.k(), g.v(), g.o()));
                    }
                    case Mla m -> {
                        MlaSpec s = m.spec();
                        qkv = Math.max(qkv, s.heads() * (s.nopeDim() + s.ropeDim()));
                        attended = Math.max(attended, s.heads() * s.vDim());
                        qLatent = Math.max(qLatent, s.qLoraRank());
                        latent = Math.max(latent, s.kvLoraRank() + s.ropeDim());
                        normed = Math.max(normed, s.kvLoraRank());
                        linears.addAll(java.util.Arrays.asList(m.qA(), m.qB(), m.kvA(), m.qAkvA(), m.kvB(), m.o()));
                        if (m.qAkvA() != null) {
                            stacked = Math.max(stacked, m.stackedWidth());
                        }
                    }
                }
                switch (l.feedForward()) {
                    case Moe m -> {
                        experts = Math.max(experts, m.layer().router().spec().numExperts());
                        shared |= m.hasShared();
                    }
                    case Dense d -> {
                        inter = Math.max(inter, d.gate().outFeatures());
                        linears.addAll(List.of(d.gate(), d.up(), d.down()));
                    }
                }
            }
            linears.add(lmHead);
            for (DeviceLinear lin : linears) {
                if (lin != null && lin.inputScratchBytes(1) > 0) {
                    input = Math.max(input, lin.inFeatures());
                }
            }
            return new Widths(qkv, attended, qLatent, latent, normed, stacked, inter, experts, input, shared);
        }
    }

    @Override
    public String describe() {
        return "resident on " + ops.deviceName() + " (routing " + (routesOnDevice ? "on the device" : "on the host")
                + "); lm_head " + (lmHead == null ? "tied to the bf16 embedding" : lmHead.describe()) + " ["
                + config.vocab() + ", " + config.hidden() + "]";
    }

    @Override
    public SequenceState newSequence() {
        return new DeviceSequence(this);
    }

    /**
     * Several sequences of this model in one forward ({@link DeviceBatch}; MoE layers route on the device while the
     * step's rows fit a device-routed pass, else on the host); one sequence, or sequences of another runtime, one
     * after another.
     */
    @Override
    public synchronized StepOutput step(List<SequenceState> sequences, List<int[]> tokens, long[] starts,
            TokenDraw[] draws) {
        boolean ours = sequences.size() > 1;
        List<DeviceSequence> device = new ArrayList<>(sequences.size());
        for (int i = 0; i < sequences.size(); i++) {
            if (sequences.get(i) instanceof DeviceSequence d && d.model() == this) {
                device.add(d);
            } else {
                ours = false;
            }
        }
        if (!ours) {
            return DecoderRuntime.super.step(sequences, tokens, starts, draws);
        }
        return batch().step(device, tokens, starts, draws);
    }

    /** The runner of batched steps (made on demand), for benches. */
    synchronized DeviceBatch batch() {
        if (batch == null) {
            batch = new DeviceBatch(this);
        }
        return batch;
    }

    @Override
    public void close() {
        ops.synchronize();
        if (batch != null) {
            batch.close();
            batch = null;
        }
        RuntimeException failure = new RuntimeException("closing the device model");
        closeAll(owned, failure);
        ops.close();
        if (failure.getSuppressed().length > 0) {
            throw failure;
        }
    }

    private static void closeAll(List<AutoCloseable> owned, RuntimeException into) {
        for (int i = owned.size() - 1; i >= 0; i--) {
            try {
                owned.get(i).close();
            } catch (Exception e) {
                into.addSuppressed(e);
            }
        }
        owned.clear();
    }
}

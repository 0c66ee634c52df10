package io.moe4j.model.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.ModelOps;
import io.moe4j.backend.cuda.driver.DeviceBuffer;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.model.AttentionWindow;
import io.moe4j.model.DecoderConfig;
import io.moe4j.model.DecoderRuntime;
import io.moe4j.model.StepOutput;
import io.moe4j.model.GqaSpec;
import io.moe4j.model.LayerSpec;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Rope;
import io.moe4j.model.SequenceState;
import io.moe4j.routing.Router;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A decoder resident on the GPU: every weight uploaded once (bf16 attention, embeddings and lm_head as stored, the
 * experts packed by the cuda backend), the KV caches on the device ({@link DeviceSequence}); a forward pass moves only
 * token ids in, each MoE layer's router logits and routing plan across, and logits out.
 *
 * <p>What runs so far: grouped-query attention with bf16 q/k/v/o (biases, sinks, full and sliding layers, any RoPE
 * scaling the host {@link Rope} computes, rotate-half or interleaved), MoE feed-forward on every layer without shared
 * experts — gpt-oss. Anything else is refused by {@link #unsupported} with what is missing.
 */
public final class DeviceModel implements DecoderRuntime {

    /**
     * One layer's weights on the device; bias and sinks buffers may be null. q, k and v are one bf16 matrix
     * [(heads + 2 kvHeads) headDim, hidden] (their rows one after another) so that one GEMV makes all three.
     */
    record Layer(GqaSpec spec, int window, DeviceBuffer inputNorm, DeviceBuffer postNorm, DeviceBuffer qkv,
                 DeviceBuffer qkvBias, DeviceBuffer o, DeviceBuffer oBias, DeviceBuffer sinks, RopeTables rope,
                 MoeLayer moe, DeviceBuffer routerWeight, DeviceBuffer routerBias, DeviceBuffer routerCorrection) {
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
    private final DeviceBuffer lmHead;
    private final List<AutoCloseable> owned;
    /** Whether every layer routes on the device (ModelOps.routesOnDevice): then passes need no host round trip. */
    private final boolean routesOnDevice;
    /** The runner of batched steps, made on the first one. */
    private DeviceBatch batch;

    private DeviceModel(DecoderConfig config, ModelOps ops, int contextLimit, List<Layer> layers, DeviceBuffer embedding,
                        DeviceBuffer finalNorm, DeviceBuffer lmHead, List<AutoCloseable> owned, boolean routesOnDevice) {
        this.routesOnDevice = routesOnDevice;
        this.config = config;
        this.ops = ops;
        this.contextLimit = contextLimit;
        this.layers = layers;
        this.embedding = embedding;
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
        this.owned = owned;
    }

    /** Why this decoder cannot run on the device yet, or empty when it can (the checkpoint's dtypes are checked at load). */
    public static Optional<String> unsupported(DecoderConfig config) {
        for (LayerSpec spec : config.layers()) {
            String where = "layer " + spec.index() + " of " + config.family().modelType();
            if (!(spec.attention() instanceof GqaSpec g)) {
                return Optional.of(where + ": multi-head latent attention");
            }
            if (!spec.isMoe()) {
                return Optional.of(where + ": dense MLP");
            }
            if (g.qkNorm() != GqaSpec.QkNorm.NONE) {
                return Optional.of(where + ": " + g.qkNorm() + " q/k norm");
            }
            if (g.temperature() != null) {
                return Optional.of(where + ": attention temperature tuning");
            }
            if (g.rope() == null) {
                return Optional.of(where + ": a layer without RoPE");
            }
            if (g.rope().dim() != g.headDim()) {
                return Optional.of(where + ": partial rotary (" + g.rope().dim() + " of " + g.headDim() + ")");
            }
            if (g.window().kind() == AttentionWindow.Kind.CHUNKED) {
                return Optional.of(where + ": chunked attention");
            }
            if (g.headDim() > ModelOps.HEAD_DIM_MAX || g.headDim() % 2 != 0) {
                return Optional.of(where + ": head_dim " + g.headDim());
            }
        }
        return Optional.empty();
    }

    /** Uploads the model; fails with "unsupported on cuda: ..." for what the device decoder does not run. */
    public static DeviceModel load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options, int contextLimit) {
        Optional<String> why = unsupported(config);
        if (why.isPresent()) {
            throw new MoeException(checkpoint.root() + ": unsupported on cuda: " + why.get());
        }
        ModelOps ops = ModelOps.open();
        List<AutoCloseable> owned = new ArrayList<>();
        try {
            Uploader up = new Uploader(config, checkpoint, ops, owned);
            int h = config.hidden();
            DeviceBuffer embedding = up.bf16(config.embedTokens() + ".weight", config.vocab(), h);
            Map<Rope, RopeTables> ropes = new IdentityHashMap<>();
            List<Layer> layers = new ArrayList<>();
            for (LayerSpec spec : config.layers()) {
                GqaSpec g = (GqaSpec) spec.attention();
                String p = spec.prefix();
                String a = p + "self_attn.";
                int qOut = g.heads() * g.headDim();
                int kvOut = g.kvHeads() * g.headDim();
                RopeTables rope = ropes.computeIfAbsent(g.rope(), r -> up.rope(r, contextLimit));
                MoeLayer moe = MoeLayer.load(checkpoint, config.model(), spec.index(),
                        MoeLayerOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(options.threads()));
                owned.add(moe);
                if (moe.hasSharedExperts()) {
                    throw new MoeException(checkpoint.root() + ": unsupported on cuda: layer " + spec.index()
                            + ": shared experts");
                }
                Router router = moe.router();
                layers.add(new Layer(g, g.window().kind() == AttentionWindow.Kind.SLIDING ? g.window().size() : 0,
                        up.floats(p + "input_layernorm.weight", h), up.floats(p + "post_attention_layernorm.weight", h),
                        up.bf16Rows(h, new String[] {a + "q_proj.weight", a + "k_proj.weight", a + "v_proj.weight"},
                                qOut, kvOut, kvOut),
                        g.bias() ? up.floats(new String[] {a + "q_proj.bias", a + "k_proj.bias", a + "v_proj.bias"},
                                qOut, kvOut, kvOut) : null,
                        up.bf16(a + "o_proj.weight", h, qOut), g.bias() ? up.floats(a + "o_proj.bias", h) : null,
                        g.sinks() ? up.floats(a + "sinks", g.heads()) : null, rope, moe,
                        up.own(ops.upload(router.weight())),
                        router.bias() == null ? null : up.own(ops.upload(router.bias())),
                        router.correction() == null ? null : up.own(ops.upload(router.correction()))));
            }
            DeviceBuffer finalNorm = up.floats(config.finalNorm() + ".weight", h);
            DeviceBuffer lmHead = config.tieEmbeddings() ? embedding
                    : up.bf16(config.lmHead() + ".weight", config.vocab(), h);
            // moe4j.cuda.hostRouting=true keeps the host's selection (a bench's comparison; the default routes on the device)
            boolean routesOnDevice = !Boolean.getBoolean("moe4j.cuda.hostRouting") && layers.stream()
                    .allMatch(l -> ModelOps.routesOnDevice(l.moe().experts(), l.moe().router().spec()));
            return new DeviceModel(config, ops, contextLimit, List.copyOf(layers), embedding, finalNorm, lmHead, owned,
                    routesOnDevice);
        } catch (RuntimeException e) {
            closeAll(owned, e);
            ops.close();
            throw e;
        }
    }

    /** Reads checkpoint tensors, checked by name, shape and dtype, into device buffers the model owns. */
    private record Uploader(DecoderConfig config, Checkpoint checkpoint, ModelOps ops, List<AutoCloseable> owned) {

        DeviceBuffer own(DeviceBuffer b) {
            owned.add(b);
            return b;
        }

        /** A bf16 matrix as stored (the device linears read bf16 pairs). */
        DeviceBuffer bf16(String name, long rows, long cols) {
            Tensor t = checkpoint.tensor(name).expectShape(rows, cols);
            if (t.dtype() != DType.BF16) {
                throw new MoeException(checkpoint.root() + ": unsupported on cuda: tensor '" + name + "' has dtype "
                        + t.dtype() + "; the device decoder reads BF16 matrices");
            }
            return own(ops.upload(t.segment()));
        }

        /** bf16 matrices [rows_i, cols] stacked into one device matrix, in the order given. */
        DeviceBuffer bf16Rows(long cols, String[] names, long... rows) {
            Tensor[] parts = new Tensor[names.length];
            long bytes = 0;
            for (int i = 0; i < names.length; i++) {
                parts[i] = checkpoint.tensor(names[i]).expectShape(rows[i], cols);
                if (parts[i].dtype() != DType.BF16) {
                    throw new MoeException(checkpoint.root() + ": unsupported on cuda: tensor '" + names[i]
                            + "' has dtype " + parts[i].dtype() + "; the device decoder reads BF16 matrices");
                }
                bytes += parts[i].segment().byteSize();
            }
            DeviceBuffer b = own(ops.allocate(bytes));
            long at = 0;
            for (Tensor t : parts) {
                b.copyFrom(t.segment(), at);
                at += t.segment().byteSize();
            }
            return b;
        }

        /** A float vector (bf16, f16 or f32 in the checkpoint) as float32. */
        DeviceBuffer floats(String name, long n) {
            return own(ops.upload(floatArray(name, n)));
        }

        /** Float vectors one after another, as float32. */
        DeviceBuffer floats(String[] names, long... n) {
            float[][] parts = new float[names.length][];
            int total = 0;
            for (int i = 0; i < names.length; i++) {
                parts[i] = floatArray(names[i], n[i]);
                total += parts[i].length;
            }
            float[] all = new float[total];
            int at = 0;
            for (float[] p : parts) {
                System.arraycopy(p, 0, all, at, p.length);
                at += p.length;
            }
            return own(ops.upload(all));
        }

        private float[] floatArray(String name, long n) {
            Tensor t = checkpoint.tensor(name).expectShape(n);
            if (t.dtype() != DType.BF16 && t.dtype() != DType.F16 && t.dtype() != DType.F32) {
                throw new MoeException(checkpoint.root() + ": tensor '" + name + "' has dtype " + t.dtype()
                        + "; expected BF16, F16 or F32");
            }
            return t.toFloatArray();
        }

        /** cos/sin tables with the host Rope's float32 arithmetic, so both decoders rotate alike. */
        RopeTables rope(Rope rope, int positions) {
            float[] inv = rope.invFreq();
            int half = inv.length;
            float[] cos = new float[positions * half];
            float[] sin = new float[positions * half];
            for (int p = 0; p < positions; p++) {
                for (int i = 0; i < half; i++) {
                    float angle = (float) p * inv[i];
                    cos[p * half + i] = (float) Math.cos(angle) * rope.attentionFactor();
                    sin[p * half + i] = (float) Math.sin(angle) * rope.attentionFactor();
                }
            }
            return new RopeTables(own(ops.upload(cos)), own(ops.upload(sin)), half, rope.interleaved());
        }
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

    DeviceBuffer lmHead() {
        return lmHead;
    }

    boolean routesOnDevice() {
        return routesOnDevice;
    }

    /** The widest rows a pass's scratch holds, over the layers: q, q|k|v, and router logits (experts). */
    record Widths(int q, int qkv, int experts) {
    }

    Widths widest() {
        int q = 0;
        int qkv = 0;
        int experts = 0;
        for (Layer l : layers) {
            q = Math.max(q, l.spec().heads() * l.spec().headDim());
            qkv = Math.max(qkv, (l.spec().heads() + 2 * l.spec().kvHeads()) * l.spec().headDim());
            experts = Math.max(experts, l.moe().router().spec().numExperts());
        }
        return new Widths(q, qkv, experts);
    }

    @Override
    public String describe() {
        return "resident on " + ops.deviceName() + " (routing " + (routesOnDevice ? "on the device" : "on the host")
                + "); lm_head bf16 [" + config.vocab() + ", " + config.hidden() + "]";
    }

    @Override
    public SequenceState newSequence() {
        return new DeviceSequence(this);
    }

    /**
     * Several sequences of this model in one forward ({@link DeviceBatch}) when every layer routes on the device and
     * the rows fit one device-routed pass; otherwise (or for one sequence) one after another.
     */
    @Override
    public synchronized StepOutput step(List<SequenceState> sequences, List<int[]> tokens, long[] starts,
            boolean[] greedyOnly) {
        int rows = 0;
        boolean ours = sequences.size() > 1;
        List<DeviceSequence> device = new ArrayList<>(sequences.size());
        for (int i = 0; i < sequences.size(); i++) {
            rows += tokens.get(i).length;
            if (sequences.get(i) instanceof DeviceSequence d && d.model() == this) {
                device.add(d);
            } else {
                ours = false;
            }
        }
        if (!ours || !DeviceBatch.fits(this, rows)) {
            return DecoderRuntime.super.step(sequences, tokens, starts, greedyOnly);
        }
        if (batch == null) {
            batch = new DeviceBatch(this);
        }
        return batch.step(device, tokens, starts, greedyOnly);
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

package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.config.ModelConfig;
import io.moe4j.layer.MoeLayer;
import io.moe4j.layer.MoeLayerOptions;
import io.moe4j.model.linear.Linear;
import io.moe4j.model.linear.LinearFactory;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.DType;
import io.moe4j.safetensors.Tensor;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * A decoder-only model of one of the five families, loaded from its checkpoint directory: token embedding, the
 * layers, final norm and lm_head. Immutable once loaded and safe to share; each sequence runs in its own
 * {@link Session}, which holds the KV cache.
 */
public final class Model implements AutoCloseable {
    private final DecoderConfig config;
    private final ModelOptions options;
    private final Checkpoint checkpoint;
    private final LinearFactory linears;
    private final Tensor embedding;
    private final List<DecoderLayer> layers;
    private final RmsNorm finalNorm;
    private final Linear lmHead;
    private final int contextLimit;
    private final GenerationConfig generation;
    /** The decoder on a device (backend cuda), or null when the host layers above run it. */
    private final DecoderRuntime device;

    private Model(DecoderConfig config, ModelOptions options, Checkpoint checkpoint, LinearFactory linears,
                  Tensor embedding, List<DecoderLayer> layers, RmsNorm finalNorm, Linear lmHead,
                  GenerationConfig generation, DecoderRuntime device) {
        this.config = config;
        this.device = device;
        this.generation = generation;
        this.options = options;
        this.checkpoint = checkpoint;
        this.linears = linears;
        this.embedding = embedding;
        this.layers = layers;
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
        this.contextLimit = contextLimit(config, options);
    }

    private static int contextLimit(DecoderConfig config, ModelOptions options) {
        return options.contextLimit() == 0 ? config.maxPositions()
                : Math.min(options.contextLimit(), config.maxPositions());
    }

    /** Loads the model in {@code dir} (config.json and its safetensors, sharded or not). */
    public static Model load(Path dir, ModelOptions options) {
        if (!java.nio.file.Files.isDirectory(dir)) {
            throw new MoeException(dir + ": not a directory (a model is a directory with config.json and its safetensors)");
        }
        DecoderConfig config = DecoderConfig.of(ModelConfig.load(dir));
        GenerationConfig generation = GenerationConfig.load(dir);
        Checkpoint checkpoint = Checkpoint.open(dir);
        if (ModelOptions.CUDA.equals(options.backend())) {
            // The whole decoder resident on the GPU; a family or layer kind it does not run yet is refused by name.
            try {
                DecoderRuntime device = deviceDecoders(options.backend()).load(config, checkpoint, options,
                        contextLimit(config, options));
                return new Model(config, options, checkpoint, null, null, List.of(), null, null, generation, device);
            } catch (RuntimeException e) {
                checkpoint.close();
                throw e;
            }
        }
        List<AutoCloseable> opened = new ArrayList<>();
        try {
            LinearFactory linears = options.linears().open(checkpoint, config.model(), options.backend(), options.threads());
            opened.add(linears);
            Loader loader = new Loader(config, checkpoint, linears, options);
            Tensor embedding = loader.plain(config.embedTokens() + ".weight", config.vocab(), config.hidden());
            List<DecoderLayer> layers = new ArrayList<>();
            for (LayerSpec spec : config.layers()) {
                DecoderLayer layer = loader.layer(spec);
                opened.add(layer);
                layers.add(layer);
            }
            RmsNorm finalNorm = loader.norm(config.finalNorm(), config.hidden(), config.normEps());
            Linear lmHead = config.tieEmbeddings()
                    ? new UnquantizedLinear(embedding, null, config.hidden(), config.vocab())
                    : linears.load(config.lmHead(), config.hidden(), config.vocab(), false);
            return new Model(config, options, checkpoint, linears, embedding, List.copyOf(layers), finalNorm, lmHead,
                    generation, null);
        } catch (RuntimeException e) {
            for (int i = opened.size() - 1; i >= 0; i--) {
                try {
                    opened.get(i).close();
                } catch (Exception suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            checkpoint.close();
            throw e;
        }
    }

    /** The registered provider of device decoders for {@code backend}. */
    private static DeviceDecoders deviceDecoders(String backend) {
        for (DeviceDecoders d : java.util.ServiceLoader.load(DeviceDecoders.class, Model.class.getClassLoader())) {
            if (d.backend().equals(backend)) {
                return d;
            }
        }
        throw new MoeException("unsupported on " + backend + ": no device decoder for it on the class path");
    }

    public DecoderConfig config() {
        return config;
    }

    public ModelOptions options() {
        return options;
    }

    /** End-of-sequence ids and sampling defaults of the checkpoint's generation_config.json. */
    public GenerationConfig generationConfig() {
        return generation;
    }

    public int vocabSize() {
        return config.vocab();
    }

    /** The most positions a session can hold: max_position_embeddings, or the smaller limit of the options. */
    public int contextLimit() {
        return contextLimit;
    }

    /** A new sequence with an empty KV cache. */
    public Session newSession() {
        return new Session(this, device != null ? device.newSequence() : new HostSequence(this));
    }

    List<DecoderLayer> layers() {
        return layers;
    }

    /** The hidden states [tokens, hidden] of the given token ids. */
    float[] embed(int[] tokens) {
        int h = config.hidden();
        float[] out = new float[tokens.length * h];
        for (int t = 0; t < tokens.length; t++) {
            int id = tokens[t];
            if (id < 0 || id >= config.vocab()) {
                throw new MoeException("token id " + id + " at index " + t + " is outside the vocabulary [0, "
                        + config.vocab() + ")");
            }
            long base = (long) id * h;
            for (int i = 0; i < h; i++) {
                out[t * h + i] = FloatMath.flushSubnormal(embedding.getFloat(base + i));
            }
        }
        return out;
    }

    /** Final norm and lm_head of {@code rows} hidden rows: logits [rows, vocab]. */
    float[] logits(float[] hidden, int rows) {
        float[] normed = finalNorm.applyRows(hidden, rows, config.hidden());
        float[] out = new float[rows * config.vocab()];
        lmHead.forward(normed, rows, out);
        return out;
    }

    @Override
    public void close() {
        if (device != null) {
            device.close();
        } else {
            for (DecoderLayer layer : layers) {
                layer.close();
            }
            lmHead.close();
            linears.close();
        }
        checkpoint.close();
    }

    /** Builds the layers of one checkpoint; every tensor is checked for name, dtype and shape as it is read. */
    private record Loader(DecoderConfig config, Checkpoint checkpoint, LinearFactory linears, ModelOptions options) {

        DecoderLayer layer(LayerSpec spec) {
            String p = spec.prefix();
            int h = config.hidden();
            Attention attention = switch (spec.attention()) {
                case GqaSpec g -> gqa(p + "self_attn.", g);
                case MlaSpec m -> mla(p + "self_attn.", m);
            };
            FeedForward ff;
            try {
                ff = spec.isMoe() ? moe(spec.index()) : dense(spec.denseMlp());
            } catch (RuntimeException e) {
                attention.close();
                throw e;
            }
            return new DecoderLayer(norm(p + "input_layernorm", h, config.normEps()), attention,
                    norm(p + "post_attention_layernorm", h, config.normEps()), ff);
        }

        private Attention gqa(String p, GqaSpec g) {
            int h = config.hidden();
            int qOut = g.heads() * g.headDim();
            int kvOut = g.kvHeads() * g.headDim();
            RmsNorm qNorm = null;
            RmsNorm kNorm = null;
            switch (g.qkNorm()) {
                case RMS -> {
                    qNorm = norm(p + "q_norm", g.headDim(), config.normEps());
                    kNorm = norm(p + "k_norm", g.headDim(), config.normEps());
                }
                case L2 -> {
                    qNorm = new RmsNorm(null, config.normEps());
                    kNorm = qNorm;
                }
                case NONE -> {
                }
            }
            float[] sinks = g.sinks() ? plain(p + "sinks", g.heads()).toFloatArray() : null;
            return new GroupedQueryAttention(g,
                    linears.load(p + "q_proj", h, qOut, g.bias()),
                    linears.load(p + "k_proj", h, kvOut, g.bias()),
                    linears.load(p + "v_proj", h, kvOut, g.bias()),
                    linears.load(p + "o_proj", qOut, h, g.bias()),
                    qNorm, kNorm, sinks);
        }

        private Attention mla(String p, MlaSpec m) {
            int h = config.hidden();
            int qk = m.nopeDim() + m.ropeDim();
            Linear qA = null;
            RmsNorm qANorm = null;
            Linear qB;
            if (m.qLoraRank() > 0) {
                qA = linears.load(p + "q_a_proj", h, m.qLoraRank(), m.bias());
                qANorm = norm(p + "q_a_layernorm", m.qLoraRank(), m.normEps());
                qB = linears.load(p + "q_b_proj", m.qLoraRank(), m.heads() * qk, false);
            } else {
                qB = linears.load(p + "q_proj", h, m.heads() * qk, false);
            }
            return new LatentAttention(m, qA, qANorm, qB,
                    linears.load(p + "kv_a_proj_with_mqa", h, m.kvLoraRank() + m.ropeDim(), m.bias()),
                    norm(p + "kv_a_layernorm", m.kvLoraRank(), m.normEps()),
                    linears.load(p + "kv_b_proj", m.kvLoraRank(), m.heads() * (m.nopeDim() + m.vDim()), false),
                    linears.load(p + "o_proj", m.heads() * m.vDim(), h, m.bias()));
        }

        private FeedForward dense(LayerSpec.DenseMlpSpec mlp) {
            int h = config.hidden();
            String p = mlp.module() + ".";
            return new DenseMlp(linears.load(p + "gate_proj", h, mlp.intermediate(), false),
                    linears.load(p + "up_proj", h, mlp.intermediate(), false),
                    linears.load(p + "down_proj", mlp.intermediate(), h, false));
        }

        private FeedForward moe(int layer) {
            MoeLayerOptions moeOptions = MoeLayerOptions.defaults().withBackend(options.backend())
                    .withThreads(options.threads());
            return new MoeFeedForward(MoeLayer.load(checkpoint, config.model(), layer, moeOptions));
        }

        RmsNorm norm(String module, int size, float eps) {
            return new RmsNorm(plain(module + ".weight", size).toFloatArray(), eps);
        }

        /** A float tensor (bf16, f16 or f32) of the given shape, named in the error when it is not. */
        Tensor plain(String name, long... shape) {
            Tensor t = checkpoint.tensor(name).expectShape(shape);
            if (t.dtype() != DType.BF16 && t.dtype() != DType.F16 && t.dtype() != DType.F32) {
                throw new MoeException(checkpoint.root() + ": tensor '" + name + "' has dtype " + t.dtype()
                        + "; expected BF16, F16 or F32");
            }
            return t;
        }
    }
}

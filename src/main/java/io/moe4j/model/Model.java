package io.moe4j.model;

import io.moe4j.MoeException;
import io.moe4j.backend.cpu.WorkerPool;
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
    /** The host model's loops (attention heads, unquantized linears) on {@link #workers}, or null on a device. */
    private final Parallel parallel;
    /** The threads every host layer, linear and attention block shares, or null on a device. */
    private final WorkerPool workers;
    /** The decoder on a device (backend cuda), or null when the host layers above run it. */
    private final DecoderRuntime device;

    private Model(DecoderConfig config, ModelOptions options, Checkpoint checkpoint, LinearFactory linears,
                  Tensor embedding, List<DecoderLayer> layers, RmsNorm finalNorm, Linear lmHead,
                  GenerationConfig generation, Parallel parallel, WorkerPool workers, DecoderRuntime device) {
        this.parallel = parallel;
        this.workers = workers;
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
            // The whole decoder resident on the GPU; what its kernels cannot take is refused by name.
            try {
                DecoderRuntime device = deviceDecoders(options.backend()).load(config, checkpoint, options,
                        contextLimit(config, options));
                return new Model(config, options, checkpoint, null, null, List.of(), null, null, generation, null,
                        null, device);
            } catch (RuntimeException e) {
                checkpoint.close();
                throw e;
            }
        }
        List<AutoCloseable> opened = new ArrayList<>();
        // One set of threads for the whole model: MoE layers, linears, attention and lm_head run their loops on it
        // one after another (sets per layer would leave idle threads spinning on the cores the busy set needs).
        WorkerPool workers = new WorkerPool(options.threads());
        opened.add(workers);
        Parallel parallel = new Parallel(workers);
        try {
            LinearFactory linears = options.linears().open(checkpoint, config.model(), options.backend(), workers);
            opened.add(linears);
            Loader loader = new Loader(config, checkpoint, linears, options, parallel);
            Tensor embedding = loader.plain(config.embedTokens() + ".weight", config.vocab(), config.hidden());
            // Fault the table in now, one sequential read: a decode step reads one row, and a row not yet in memory
            // costs page faults from disk (2.4 ms a token measured on gpt-oss-20b's table) at every new token id.
            if (embedding.segment().isMapped()) {
                embedding.segment().load();
            }
            List<DecoderLayer> layers = new ArrayList<>();
            for (LayerSpec spec : config.layers()) {
                DecoderLayer layer = loader.layer(spec);
                opened.add(layer);
                layers.add(layer);
                options.loadListener().layerLoaded(layers.size(), config.layers().size());
            }
            RmsNorm finalNorm = loader.norm(config.finalNorm(), config.hidden(), config.normEps());
            Linear lmHead = config.tieEmbeddings()
                    ? new UnquantizedLinear(embedding, null, config.hidden(), config.vocab(),
                            options.backend().equals("emulation") ? null : parallel)
                    : linears.load(config.lmHead(), config.hidden(), config.vocab(), false);
            return new Model(config, options, checkpoint, linears, embedding, List.copyOf(layers), finalNorm, lmHead,
                    generation, parallel, workers, null);
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

    /**
     * Prompt tokens and greedy decode steps of {@link #warmUp}'s throwaway sequence: two steps compile the decode
     * kernels as well as eight did (a step calls each many times), and on a 2-core machine a 24-layer model's step
     * takes a second.
     */
    private static final int WARM_PROMPT = 32;
    private static final int WARM_STEPS = 2;

    /**
     * Runs a throwaway sequence through a short prompt (token ids 0, 1, ...) and a few greedy decode steps, so that the
     * JIT has compiled the prompt and decode kernels (and a device model has compiled and loaded its kernels) before
     * the first request: without it the first prompt pays for that. On the cpu backend (Zen 3, 2 threads, gpt-oss-20b
     * shapes with 2 layers) a first 16-token prompt took 4.4 s and the next 0.37 s. Leaves nothing behind but compiled
     * code (and on a device the kernels and scratch buffers a pass sets up); sessions before and after it compute the
     * same. Returns the seconds it took.
     */
    public double warmUp() {
        long start = System.nanoTime();
        int steps = Math.min(WARM_STEPS, Math.max(0, contextLimit - 1));
        int[] prompt = new int[Math.max(1, Math.min(WARM_PROMPT, contextLimit - steps))];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = i % config.vocab();
        }
        try (Session s = newSession()) {
            s.forward(prompt, false);
            int token = 0;
            for (int i = 0; i < steps && s.position() < contextLimit; i++) {
                token = s.decodeGreedy(token);
            }
        }
        return (System.nanoTime() - start) / 1e9;
    }

    /**
     * One line for logs: family, layers (MoE and dense), attention kinds, context limit, backend and how the linears
     * run, e.g. {@code gpt_oss: 24 layers (24 MoE), attention sliding 128 ×12, full ×12; context 131072; cpu; ...}.
     */
    public String describe() {
        java.util.Map<String, Integer> kinds = new java.util.LinkedHashMap<>();
        int moe = 0;
        for (LayerSpec l : config.layers()) {
            moe += l.isMoe() ? 1 : 0;
            String kind = switch (l.attention()) {
                case MlaSpec m -> "latent";
                case GqaSpec g -> switch (g.window().kind()) {
                    case FULL -> g.rope() == null ? "full NoPE" : "full";
                    case SLIDING -> "sliding " + g.window().size();
                    case CHUNKED -> "chunked " + g.window().size();
                };
            };
            kinds.merge(kind, 1, Integer::sum);
        }
        StringBuilder attention = new StringBuilder();
        kinds.forEach((k, n) -> attention.append(attention.isEmpty() ? "" : ", ").append(k).append(" ×").append(n));
        return config.family().modelType() + ": " + config.numLayers() + " layers (" + moe + " MoE), attention "
                + attention + "; context " + contextLimit + "; " + options.backend() + "; "
                + (device != null ? device.describe() : "lm_head " + lmHead.describe());
    }

    /**
     * One step of continuous batching: feeds {@code tokens.get(i)} to {@code sessions.get(i)} for every i in one
     * forward (every linear and MoE layer runs once over all the rows; attention runs per sequence against its own
     * cache) and returns each sequence's logits after its last new token, [sessions][vocab]. Each sequence's logits
     * are those it would get alone, within the backend's tolerance (more rows can take other kernels and summation
     * orders; docs/cuda.md for the device). A failure inside a layer leaves every session of the step refusing work until
     * reset.
     */
    public float[][] step(List<Session> sessions, List<int[]> tokens) {
        return step(sessions, tokens, new TokenDraw[sessions.size()]).logits();
    }

    /**
     * {@link #step(List, List)} where the sequences with a draw ({@code draws[i]} not null) take only the token it
     * draws from their last logits ({@link TokenDraw}'s rule) instead of the logits: a model on a device draws them
     * there and reads back one id each instead of the vocabulary's logits.
     */
    public StepOutput step(List<Session> sessions, List<int[]> tokens, TokenDraw[] draws) {
        if (draws.length != sessions.size()) {
            throw new IllegalArgumentException(sessions.size() + " sessions but " + draws.length + " draws");
        }
        if (sessions.size() != tokens.size()) {
            throw new IllegalArgumentException(sessions.size() + " sessions but " + tokens.size() + " token runs");
        }
        int n = sessions.size();
        if (n == 0) {
            return new StepOutput(new float[0][], new int[0]);
        }
        int total = 0;
        for (int i = 0; i < n; i++) {
            Session s = sessions.get(i);
            if (s.model() != this) {
                throw new IllegalArgumentException("session " + i + " belongs to another model");
            }
            for (int j = 0; j < i; j++) {
                if (sessions.get(j) == s) {
                    throw new IllegalArgumentException("session " + i + " appears twice in one step");
                }
            }
            int len = tokens.get(i).length;
            if (len == 0) {
                throw new IllegalArgumentException("no tokens to feed to session " + i);
            }
            s.checkFeed(tokens.get(i), 1);
            total += len;
        }
        if (device != null) {
            // The device decoder runs the step (the cuda one in one forward over every sequence's rows).
            List<SequenceState> states = new ArrayList<>(n);
            long[] starts = new long[n];
            for (int i = 0; i < n; i++) {
                states.add(sessions.get(i).state());
                starts[i] = sessions.get(i).position();
            }
            StepOutput out;
            try {
                out = device.step(states, tokens, starts, draws);
            } catch (RuntimeException e) {
                for (Session s : sessions) {
                    s.fail("a batched step on the device: " + e.getMessage());
                }
                throw e;
            }
            for (int i = 0; i < n; i++) {
                sessions.get(i).advance(tokens.get(i).length);
            }
            return out;
        }
        if ((long) total * config.hidden() > Integer.MAX_VALUE - 8) {
            throw new MoeException(total + " tokens in one step do not fit in one Java array: feed fewer at once");
        }
        int[] all = new int[total];
        int[] rowOf = new int[n];
        int row = 0;
        for (int i = 0; i < n; i++) {
            int[] t = tokens.get(i);
            rowOf[i] = row;
            System.arraycopy(t, 0, all, row, t.length);
            row += t.length;
        }
        float[] h = embed(all);
        int hidden = config.hidden();
        int layer = 0;
        try {
            for (; layer < layers.size(); layer++) {
                List<Attention.Segment> segments = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    Session s = sessions.get(i);
                    segments.add(new Attention.Segment(rowOf[i], tokens.get(i).length, s.position(),
                            s.host().cache(layer)));
                }
                layers.get(layer).forward(h, total, hidden, segments);
            }
        } catch (RuntimeException e) {
            for (Session s : sessions) {
                s.fail("layer " + layer + " of a batched step: " + e.getMessage());
            }
            throw e;
        }
        float[] last = new float[n * hidden];
        for (int i = 0; i < n; i++) {
            sessions.get(i).advance(tokens.get(i).length);
            int r = rowOf[i] + tokens.get(i).length - 1;
            System.arraycopy(h, r * hidden, last, i * hidden, hidden);
        }
        float[] logits = logits(last, n);
        float[][] out = new float[n][];
        int v = config.vocab();
        for (int i = 0; i < n; i++) {
            out[i] = java.util.Arrays.copyOfRange(logits, i * v, (i + 1) * v);
        }
        return StepOutput.of(out, draws);
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
            parallel.close();
            workers.close();
        }
        checkpoint.close();
    }

    /** Builds the layers of one checkpoint; every tensor is checked for name, dtype and shape as it is read. */
    private record Loader(DecoderConfig config, Checkpoint checkpoint, LinearFactory linears, ModelOptions options,
                          Parallel parallel) {

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
                    qNorm, kNorm, sinks, parallel);
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
                    linears.load(p + "o_proj", m.heads() * m.vDim(), h, m.bias()), parallel,
                    !options.backend().equals("emulation"));
        }

        private FeedForward dense(LayerSpec.DenseMlpSpec mlp) {
            int h = config.hidden();
            String p = mlp.module() + ".";
            return new DenseMlp(linears.load(p + "gate_proj", h, mlp.intermediate(), false),
                    linears.load(p + "up_proj", h, mlp.intermediate(), false),
                    linears.load(p + "down_proj", mlp.intermediate(), h, false));
        }

        private FeedForward moe(int layer) {
            MoeLayerOptions moeOptions = MoeLayerOptions.defaults()
                    .withBackend(options.backend(), io.moe4j.backend.oracle.BackendChoice.MODEL)
                    .withWorkers(parallel.workers()).withKernelActivations(options.kernelActivations());
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

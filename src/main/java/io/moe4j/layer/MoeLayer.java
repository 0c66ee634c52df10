package io.moe4j.layer;

import io.moe4j.MoeException;
import io.moe4j.backend.Backend;
import io.moe4j.backend.ExecutionOptions;
import io.moe4j.backend.Experts;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.oracle.BackendChoice;
import io.moe4j.backend.oracle.Oracle;
import io.moe4j.backend.oracle.Selection;
import io.moe4j.config.ExpertNaming;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.config.ModelConfig;
import io.moe4j.quant.ExpertWeights;
import io.moe4j.quant.LoadOptions;
import io.moe4j.quant.QuantMethod;
import io.moe4j.quant.config.QuantizationConfig;
import io.moe4j.quant.method.SharedExpertLoader;
import io.moe4j.routing.Router;
import io.moe4j.routing.Routing;
import io.moe4j.routing.TokenRouter;
import io.moe4j.safetensors.Checkpoint;
import io.moe4j.safetensors.Tensor;

import java.lang.foreign.Arena;
import java.nio.file.Path;

/**
 * One MoE layer of a real checkpoint, ready to run: router → prepare → experts → finalize, plus shared experts.
 * The public API of moe4j. Thread-safe: concurrent {@link #forward} calls share only immutable state.
 */
public final class MoeLayer implements AutoCloseable {
    private static final System.Logger LOG = System.getLogger(MoeLayer.class.getName());

    private final MoeLayerConfig config;
    private final QuantMethod method;
    private final Checkpoint checkpoint;
    private final boolean ownsCheckpoint;
    private final Arena arena;
    private final TokenRouter router;
    private final Router hostRouter;
    private final ExpertWeights weights;
    private final Experts experts;
    private final Experts shared;
    private final Selection selection;

    private MoeLayer(MoeLayerConfig config, QuantMethod method, Checkpoint checkpoint, boolean ownsCheckpoint, Arena arena,
                     TokenRouter router, Router hostRouter, ExpertWeights weights, Experts experts, Experts shared,
                     Selection selection) {
        this.config = config;
        this.hostRouter = hostRouter;
        this.method = method;
        this.checkpoint = checkpoint;
        this.ownsCheckpoint = ownsCheckpoint;
        this.arena = arena;
        this.router = router;
        this.weights = weights;
        this.experts = experts;
        this.shared = shared;
        this.selection = selection;
    }

    /** Loads MoE layer {@code layer} of the checkpoint in {@code dir} and prepares it on the chosen backend. */
    public static MoeLayer load(Path dir, int layer, MoeLayerOptions options) {
        ModelConfig model = ModelConfig.load(dir);
        model.layer(layer); // fails on a bad layer index before any file is mapped
        Checkpoint checkpoint = Checkpoint.open(dir);
        try {
            return load(checkpoint, model, layer, options, true);
        } catch (RuntimeException e) {
            checkpoint.close();
            throw e;
        }
    }

    /**
     * Loads MoE layer {@code layer} from an already open checkpoint (a model loads all its layers from one mapping);
     * the checkpoint stays open when the layer closes.
     */
    public static MoeLayer load(Checkpoint checkpoint, ModelConfig model, int layer, MoeLayerOptions options) {
        return load(checkpoint, model, layer, options, false);
    }

    private static MoeLayer load(Checkpoint checkpoint, ModelConfig model, int layer, MoeLayerOptions options,
                                 boolean ownsCheckpoint) {
        MoeLayerConfig config = expertsWhereTheCheckpointHasThem(model.layer(layer), checkpoint);
        QuantMethod method = QuantizationConfig.of(model).methodFor(config);
        Arena arena = Arena.ofShared();
        Experts experts = null;
        Experts shared = null;
        TokenRouter tokenRouter = null;
        try {
            Router router = loadRouter(checkpoint, config);
            ExpertWeights weights = method.load(checkpoint, config,
                    new LoadOptions(options.localExperts(), bytes -> { }), arena);
            Platform platform = options.platform() != null ? options.platform() : PlatformProbe.probe();
            BackendChoice choice = BackendChoice.resolve(options.backend(), options.backendSource(), null,
                    System.getenv(), System.getProperties());
            Selection selection = Oracle.standard().select(
                    MoeProblem.of(weights, config.topK()).withKernelActivations(options.kernelActivations()), platform, choice);
            LOG.log(System.Logger.Level.INFO, "layer {0}: {1}", layer, selection.logLine());
            weights = ActivationOverride.apply(weights, selection.problem().scheme());
            ExecutionOptions exec = new ExecutionOptions(options.threads(), options.workers(), options.kernelActivations(),
                    options.device());
            experts = selection.chosen().prepare(weights, exec);
            // With expert parallelism the slices' outputs are summed: one slice adds the shared experts.
            if (config.shared() != null && options.addsSharedExperts()) {
                ExpertWeights sharedWeights = SharedExpertLoader.load(checkpoint, config,
                        QuantizationConfig.of(model)::linearMethod, arena);
                shared = selection.chosen().prepare(sharedWeights, exec);
            }
            // The loaded codes and scales (concatenated copies for most schemes) would otherwise stay beside the
            // backend's own copy for the layer's life: qwen3-30b-a3b FP8 on the CPU held 1.8x its weights in
            // anonymous memory.
            if (!experts.readsLoadedWeights() && (shared == null || !shared.readsLoadedWeights())) {
                arena.close();
            }
            tokenRouter = selection.chosen().prepareRouter(router, exec);
            if (tokenRouter != router) {
                LOG.log(System.Logger.Level.INFO, "layer {0}: router on {1}", layer, tokenRouter.where());
            }
            return new MoeLayer(config, method, checkpoint, ownsCheckpoint, arena, tokenRouter, router, weights, experts,
                    shared, selection);
        } catch (RuntimeException e) {
            if (tokenRouter != null) {
                tokenRouter.close();
            }
            if (shared != null) {
                shared.close();
            }
            if (experts != null) {
                experts.close();
            }
            if (arena.scope().isAlive()) {
                arena.close();
            }
            throw e;
        }
    }

    /**
     * Mixtral's experts sit under {@code block_sparse_moe.experts.} on the hub, but a checkpoint saved by transformers
     * v5 keeps the router there and writes the experts under {@code mlp.experts.}: take the experts from where the
     * checkpoint has them.
     */
    static MoeLayerConfig expertsWhereTheCheckpointHasThem(MoeLayerConfig c, Checkpoint checkpoint) {
        ExpertNaming n = c.experts();
        String blockSparse = ".block_sparse_moe.";
        if (n.fused() || !n.expertsPrefix().contains(blockSparse) || hasTensorUnder(checkpoint, n.expertsPrefix())) {
            return c;
        }
        String moved = n.expertsPrefix().replace(blockSparse, ".mlp.");
        if (!hasTensorUnder(checkpoint, moved)) {
            return c;
        }
        ExpertNaming naming = new ExpertNaming(n.blockPrefix(), moved, false, n.gate(), n.up(), n.down());
        return new MoeLayerConfig(c.family(), c.layer(), c.hidden(), c.intermediate(), c.router(), c.activation(),
                c.swigluLimit(), naming, c.routerWeight(), c.routerBias(), c.correctionBias(), c.gateUpInterleaved(),
                c.fusedTransposed(), c.hasExpertBias(), c.shared());
    }

    private static boolean hasTensorUnder(Checkpoint checkpoint, String prefix) {
        return checkpoint.names().stream().anyMatch(name -> name.startsWith(prefix));
    }

    private static Router loadRouter(Checkpoint ckpt, MoeLayerConfig c) {
        int e = c.numExperts();
        int h = c.hidden();
        float[] weight = floats(ckpt.tensor(c.routerWeight()).expectShape(e, h));
        float[] bias = c.routerBias() == null ? null : floats(ckpt.tensor(c.routerBias()).expectShape(e));
        float[] correction = c.correctionBias() == null ? null
                : floats(ckpt.tensor(c.correctionBias()).expectShape(e));
        return new Router(c.router(), h, weight, bias, correction);
    }

    private static float[] floats(Tensor t) {
        return t.toFloatArray();
    }

    /** Runs the layer on x [T, H] (row-major): {@link #route}, {@link #routed}, then {@link #shared}. */
    public MoeOutput forward(float[] x, int tokens) {
        checkInput(x, tokens);
        Routing routing = router.route(x, tokens);
        float[] out = new float[tokens * config.hidden()];
        if (tokens > 0) {
            experts.forward(x, tokens, routing, out);
            shared(x, tokens, out);
        }
        return new MoeOutput(tokens, config.hidden(), out, routing);
    }

    /** The router's choice for x [T, H] over all the layer's experts, wherever they are held. */
    public Routing route(float[] x, int tokens) {
        checkInput(x, tokens);
        return router.route(x, tokens);
    }

    /**
     * Writes into out [T, H] the routed experts' part of the output for rows x [T, H] and their routing (global
     * expert ids, as {@link #route} gives them): the experts held here contribute, the others add zero. With expert
     * parallelism the rows come from other ranks, with the routing their home rank made.
     */
    public void routed(float[] x, int tokens, Routing routing, float[] out) {
        checkInput(x, tokens);
        if (routing.tokens() != tokens || routing.topK() != config.topK()) {
            throw new MoeException("routing of " + routing.tokens() + " tokens × top-" + routing.topK()
                    + " does not fit " + tokens + " tokens of a top-" + config.topK() + " layer");
        }
        if (out.length != x.length) {
            throw new MoeException("output has " + out.length + " values; expected " + x.length);
        }
        if (tokens > 0) {
            experts.forward(x, tokens, routing, out);
        }
    }

    /** Adds the shared experts' output for x [T, H] to out [T, H], when this layer adds them; else nothing. */
    public void shared(float[] x, int tokens, float[] out) {
        checkInput(x, tokens);
        if (out.length != x.length) {
            throw new MoeException("output has " + out.length + " values; expected " + x.length);
        }
        if (shared == null || tokens == 0) {
            return;
        }
        float[] s = new float[tokens * config.hidden()];
        shared.forward(x, tokens, everyTokenToExpertZero(tokens), s);
        for (int i = 0; i < out.length; i++) {
            out[i] += s[i];
        }
    }

    private void checkInput(float[] x, int tokens) {
        int h = config.hidden();
        if (tokens < 0 || x.length != (long) tokens * h) {
            throw new MoeException("input has " + x.length + " values; expected tokens × hidden = " + tokens + " × " + h);
        }
    }

    private static Routing everyTokenToExpertZero(int tokens) {
        float[] ones = new float[tokens];
        java.util.Arrays.fill(ones, 1f);
        return new Routing(tokens, 1, new int[tokens], ones, false);
    }

    public MoeLayerConfig config() {
        return config;
    }

    /**
     * The layer's router as loaded (weights, bias and the selection rules on the host), whichever backend routes the
     * layer's own forward calls: a caller that computes the logits elsewhere selects with {@link Router#select}.
     */
    public Router router() {
        return hostRouter;
    }

    /** The prepared experts (the backend's own type; a model on the device drives them with device buffers). */
    public Experts experts() {
        return experts;
    }

    /** Whether the layer has shared experts beside the routed ones. */
    public boolean hasSharedExperts() {
        return shared != null;
    }

    /**
     * The prepared shared experts (one expert every token runs with weight 1), or null when the layer has none or
     * does not add them; a model on the device drives them with device buffers.
     */
    public Experts sharedExperts() {
        return shared;
    }

    /**
     * The expert weights as loaded: scheme, shapes, biases and activation scales. Where the backend packed a copy of
     * its own ({@link Experts#readsLoadedWeights} false, as on the CPU) their codes and block scales were released
     * after packing, and reading those segments throws {@link IllegalStateException}.
     */
    public ExpertWeights weights() {
        return weights;
    }

    public QuantMethod method() {
        return method;
    }

    /** Which backend runs the experts, and why. */
    public Selection selection() {
        return selection;
    }

    public Backend backend() {
        return selection.chosen();
    }

    /** Whether this layer adds shared experts to its output (it has them, and its options give them to it). */
    public boolean addsSharedExperts() {
        return shared != null;
    }

    @Override
    public void close() {
        router.close();
        experts.close();
        if (shared != null) {
            shared.close();
        }
        if (arena.scope().isAlive()) {
            arena.close();
        }
        if (ownsCheckpoint) {
            checkpoint.close();
        }
    }
}

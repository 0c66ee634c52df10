package io.moe4j.cli;

import io.moe4j.MoeException;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.PlatformProbe;
import io.moe4j.backend.oracle.BackendChoice;
import io.moe4j.backend.oracle.BackendRegistry;
import io.moe4j.backend.oracle.Candidate;
import io.moe4j.backend.oracle.Oracle;
import io.moe4j.backend.oracle.Selection;
import io.moe4j.config.ModelConfig;
import io.moe4j.config.MoeLayerConfig;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.config.QuantizationConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code moe backends}: the platform, every backend's answer for each MoE layer scheme of a model, and the choice. */
@Command(name = "backends", mixinStandardHelpOptions = true,
        description = {"Show this machine, and for each MoE layer scheme of a model which backends can run it, why "
                + "or why not, and which one is chosen.",
                "Environment: MOE4J_MOE_BACKEND (as --backend), MOE4J_MOE_ACTIVATION (as --activation), "
                        + "MOE4J_MXFP4_ACTIVATION (as --activation, MXFP4 layers only), MOE4J_PLATFORM (as --platform)."})
public final class BackendsCommand implements Callable<Integer> {

    @Option(names = "--model", description = "checkpoint directory (its config.json)")
    Path model;

    @Option(names = "--backend", description = "auto, cuda, cpu, emulation, or a vLLM --moe-backend name "
            + "(triton, marlin, flashinfer_trtllm, flashinfer_cutlass, deep_gemm, cutlass, ...)")
    String backend;

    @Option(names = "--activation", description = "quantize weight-only layers' expert activations to a scheme, as "
            + "MOE4J_MOE_ACTIVATION does: bf16, fp8, mxfp8, mxfp4, mxfp6_e3m2, mxfp6_e2m3, nvfp4, int8 (a change "
            + "of the layer's numbers; not the whole-model commands' --activations, the cpu kernels' precision)")
    String activation;

    @Option(names = "--platform", description = "pose as another machine: cpu, cpu-novector, h100, h200")
    String platform;

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public Integer call() {
        PrintWriter out = spec.commandLine().getOut();
        Optional<String> pose = platform != null ? Optional.of(platform.trim().toLowerCase(Locale.ROOT))
                : PlatformProbe.activePose();
        if (pose.isPresent() && !PlatformProbe.POSES.contains(pose.get())) {
            throw new MoeException("--platform " + platform + ": not a platform this command can pose as; choose "
                    + String.join(", ", PlatformProbe.POSES));
        }
        Platform here = pose.map(p -> PlatformProbe.pose(p, PlatformProbe.probeReal())).orElseGet(PlatformProbe::probeReal);
        BackendChoice choice = BackendChoice.resolve(backend, activation, System.getenv(), System.getProperties());
        List<LayerGroup> groups = List.of();
        String modelError = null;
        if (model != null) {
            try {
                groups = group(layerProblems(ModelConfig.load(model)));
            } catch (MoeException e) {
                modelError = e.getMessage();
            }
        }
        int rc = report(here, pose.orElse(null), choice, Oracle.standard(), groups, model != null, out);
        if (modelError != null) {
            out.println();
            out.println("--model " + model + ": " + modelError);
            out.flush();
            return 1;
        }
        return rc;
    }

    /** One MoE layer of a checkpoint as the oracle sees it. */
    public record LayerProblem(int layer, MoeProblem problem) {
    }

    /** Consecutive-or-not layers sharing one problem. */
    public record LayerGroup(List<Integer> layers, MoeProblem problem) {
        String label() {
            if (layers.size() == 1) {
                return "layer " + layers.getFirst();
            }
            boolean contiguous = layers.getLast() - layers.getFirst() == layers.size() - 1;
            return "layers " + (contiguous ? layers.getFirst() + "-" + layers.getLast() : layers.toString())
                    + " (" + layers.size() + ")";
        }
    }

    /**
     * The MoE layers of a checkpoint as oracle problems: each layer's sizes and router from its {@link ModelConfig},
     * its scheme from the quantization config ({@code QuantizationConfig.of(config).methodFor(layer).scheme()}, which
     * refuses a scheme the seeds refuse, with their message). All experts are local (expert parallelism is a load
     * option, not a property of the checkpoint).
     */
    public static List<LayerProblem> layerProblems(ModelConfig config) {
        QuantizationConfig quant = QuantizationConfig.of(config);
        List<LayerProblem> out = new ArrayList<>();
        for (int l : config.moeLayers()) {
            MoeLayerConfig layer = config.layer(l);
            QuantScheme scheme = quant.methodFor(layer).scheme();
            out.add(new LayerProblem(l, new MoeProblem(scheme, layer.hidden(), layer.intermediate(),
                    layer.router().numExperts(), layer.router().topK(), layer.activation(), false)));
        }
        return out;
    }

    static List<LayerGroup> group(List<LayerProblem> problems) {
        List<LayerGroup> groups = new ArrayList<>();
        for (LayerProblem p : problems) {
            LayerGroup g = groups.stream().filter(x -> x.problem().equals(p.problem())).findFirst().orElse(null);
            if (g == null) {
                groups.add(new LayerGroup(new ArrayList<>(List.of(p.layer())), p.problem()));
            } else {
                g.layers().add(p.layer());
            }
        }
        return groups.stream().map(g -> new LayerGroup(List.copyOf(g.layers()), g.problem())).toList();
    }

    /**
     * Prints the report; returns 0, or 1 when some layer has no backend under this choice.
     *
     * @param pose the platform pose in effect, or null
     */
    public static int report(Platform platform, String pose, BackendChoice choice, Oracle oracle,
                             List<LayerGroup> groups, PrintWriter out) {
        return report(platform, pose, choice, oracle, groups, !groups.isEmpty(), out);
    }

    private static int report(Platform platform, String pose, BackendChoice choice, Oracle oracle,
                              List<LayerGroup> groups, boolean hasModel, PrintWriter out) {
        out.println("platform" + (pose == null ? " (this machine)" : " (POSED as " + pose + ", not this machine)") + ":");
        for (String line : PlatformProbe.describe(platform).split("\n")) {
            out.println("  " + line);
        }
        out.println("backends:");
        for (BackendRegistry.Entry e : oracle.registry().entries()) {
            out.printf("  %-10s %s%n", e.name(), e.backend().description());
        }
        out.print("choice: " + (choice.isAuto() ? "auto" : choice.label()));
        if (!choice.activationOverrides().isEmpty()) {
            out.print("; activation override: " + String.join(", ",
                    choice.activationOverrides().stream().map(o -> o.source()
                            + (o.onlyFor() == null ? "" : " (" + o.onlyFor() + " layers)")).toList()));
        }
        out.println();
        if (groups.isEmpty() && !hasModel) {
            out.println("(no --model: pass a checkpoint directory to see each MoE layer's backends)");
        }
        int rc = 0;
        for (LayerGroup g : groups) {
            MoeProblem p = g.problem();
            out.println();
            out.println(g.label() + ": " + p.scheme().name() + " [H " + p.hidden() + ", I " + p.intermediate() + ", "
                    + p.numExperts() + " experts, top-" + p.topK() + (p.expertParallel() ? ", expert-parallel" : "") + "]");
            try {
                for (Candidate c : oracle.consider(p, platform, choice)) {
                    out.printf("  %-10s %-12s %s%n", c.backendName(), c.supported() ? "supported" : "unsupported",
                            c.support().reason());
                }
                Selection s = oracle.select(p, platform, choice);
                out.println("  → " + s.backendName() + " (" + s.activation() + " activations): " + s.reason());
                out.println("    sizes " + s.sizes() + "; layout " + s.layout());
            } catch (MoeException e) {
                out.println("  → no backend: " + e.getMessage());
                rc = 1;
            }
        }
        out.flush();
        return rc;
    }
}

package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.backend.BackendTraits;
import io.moe4j.MoeException;
import io.moe4j.backend.KernelActivations;
import io.moe4j.backend.MoeProblem;
import io.moe4j.backend.Platform;
import io.moe4j.backend.Support;
import io.moe4j.quant.ActivationFormat;
import io.moe4j.quant.QuantScheme;
import io.moe4j.quant.WeightFormat;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Picks the backend for one MoE layer on one machine, and says why: the seed's {@code select_mxfp4_moe_backend}
 * for every scheme.
 *
 * <ol>
 *   <li>The activation precision: the checkpoint's, or the user's override where the checkpoint is weight-only; an
 *       override that contradicts the checkpoint fails (the seed's {@code _resolve_activation_key}).</li>
 *   <li>Every registered backend is asked, in the scheme's priority order; a backend asked for a quantized-activation
 *       variant must also offer it in its {@link BackendTraits} (the seed's {@code _filter_by_activation}).</li>
 *   <li>{@code auto} takes the first that can; a named backend is taken if it can, and otherwise the selection fails
 *       naming it, its reason and the backends that can. Never a silent fallback.</li>
 * </ol>
 */
public final class Oracle {
    private static final System.Logger LOG = System.getLogger(Oracle.class.getName());

    private final BackendRegistry registry;
    private final BackendPriority priority;

    public Oracle(BackendRegistry registry, BackendPriority priority) {
        this.registry = registry;
        this.priority = priority;
    }

    public Oracle(BackendRegistry registry) {
        this(registry, BackendPriority.standard());
    }

    /** The backends of this build, in the standard priority order. */
    public static Oracle standard() {
        return new Oracle(BackendRegistry.standard());
    }

    public BackendRegistry registry() {
        return registry;
    }

    /**
     * Selects the backend for a layer.
     *
     * @throws MoeException when the user's activation override contradicts the checkpoint, when the named backend
     *                      cannot run this layer here, or when no backend can
     */
    public Selection select(MoeProblem problem, Platform platform, BackendChoice choice) {
        Request request = request(problem, choice);
        List<Candidate> considered = consider(request, platform);
        for (Candidate c : considered) {
            if (!c.supported()) {
                LOG.log(System.Logger.Level.DEBUG, "MoE backend {0} cannot run {1}: {2}", c.backendName(),
                        request.describe(), c.support().reason());
            }
        }
        if (choice.isAuto()) {
            List<Candidate> passedOver = new ArrayList<>();
            for (Candidate c : considered) {
                if (c.supported()) {
                    String order = considered.stream().map(Candidate::backendName).collect(Collectors.joining(" > "));
                    StringBuilder reason = new StringBuilder("auto (" + order + "): " + c.support().reason());
                    for (Candidate p : passedOver) {
                        reason.append("; not ").append(p.backendName()).append(": ").append(p.support().reason());
                    }
                    return selection(c.backendName(), reason.toString(), considered, request);
                }
                passedOver.add(c);
            }
            throw new MoeException("no MoE backend supports " + request.describe() + " here: " + considered.stream()
                    .map(c -> c.backendName() + ": " + c.support().reason()).collect(Collectors.joining("; ")));
        }
        String able = able(considered);
        Optional<Candidate> forced = considered.stream().filter(c -> c.backendName().equals(choice.backend())).findFirst();
        if (forced.isEmpty()) {
            throw new MoeException("backend " + choice.label() + " is not in this build (it has "
                    + String.join(", ", registry.names()) + "); " + ableClause(able, request));
        }
        Candidate c = forced.get();
        if (!c.supported()) {
            throw new MoeException("backend " + choice.label() + " cannot run " + request.describe() + " here: "
                    + c.support().reason() + "; " + (able.isEmpty() ? "no backend can run it here" : "backends that can: " + able));
        }
        return selection(c.backendName(), "forced by " + choice.source() + " " + choice.label() + ": "
                + c.support().reason(), considered, request);
    }

    /**
     * Every registered backend's answer for this layer, in priority order, without choosing (for {@code moe backends}).
     *
     * @throws MoeException when the user's activation override contradicts the checkpoint
     */
    public List<Candidate> consider(MoeProblem problem, Platform platform, BackendChoice choice) {
        return consider(request(problem, choice), platform);
    }

    /** The activation precision this layer runs with under this choice (may throw as {@link #select} does). */
    public ActivationKey activation(MoeProblem problem, BackendChoice choice) {
        return request(problem, choice).activation();
    }

    private static String ableClause(String able, Request r) {
        return able.isEmpty() ? "no backend can run " + r.describe() + " here"
                : "backends that can run " + r.describe() + " here: " + able;
    }

    private static String able(List<Candidate> considered) {
        return considered.stream().filter(Candidate::supported).map(Candidate::backendName)
                .collect(Collectors.joining(", "));
    }

    private Selection selection(String name, String reason, List<Candidate> considered, Request r) {
        BackendRegistry.Entry e = registry.find(name).orElseThrow();
        if (r.variant()) {
            reason += "; " + r.activation() + " activations (" + r.activationSource() + ")";
        }
        return new Selection(e.backend(), reason, considered, r.activation(), r.asked(), e.traits(),
                e.traits().padded(r.asked()));
    }

    private List<Candidate> consider(Request r, Platform platform) {
        WeightFormat weights = r.asked().scheme().weights();
        List<Candidate> out = new ArrayList<>();
        for (String name : priority.order(r.asked().scheme(), registry.names())) {
            BackendRegistry.Entry e = registry.find(name).orElseThrow();
            Support s;
            try {
                s = e.backend().support(r.asked(), platform);
            } catch (RuntimeException ex) {
                s = Support.no("its support check failed: " + ex);
            }
            if (s == null) {
                s = Support.no("its support check gave no answer");
            }
            KernelActivations ka = r.asked().kernelActivations();
            if (s.supported() && !e.backend().computesWith(ka)) {
                s = Support.no("its kernels multiply activations in float only, not --activations " + ka);
            }
            if (s.supported() && r.variant()) {
                BackendTraits.ActivationVariant v = e.traits().variantFor(weights, r.activation());
                if (v == null) {
                    s = Support.no("runs " + weights + " weights with " + e.traits().activationsFor(weights).stream()
                            .map(ActivationKey::label).collect(Collectors.joining(", ")) + " activations, not "
                            + r.activation() + " (" + r.activationSource() + ")");
                } else {
                    Support vs = v.check(weights, platform);
                    if (!vs.supported()) {
                        s = vs;
                    }
                }
            }
            out.add(new Candidate(name, s));
        }
        return out;
    }

    /**
     * The layer as the backends are asked it.
     *
     * @param variant whether a weight-only layer runs with quantized activations (the backend must offer it)
     */
    record Request(MoeProblem asked, ActivationKey activation, boolean variant, String activationSource) {
        String describe() {
            return asked.scheme().name() + (variant ? " with " + activation + " activations" : "")
                    + (asked.kernelActivations() == KernelActivations.FLOAT ? ""
                    : " with " + asked.kernelActivations() + " kernel activations");
        }
    }

    /** The seed's {@code _resolve_activation_key}, then the activation a backend name implies. */
    static Request request(MoeProblem problem, BackendChoice choice) {
        QuantScheme s = problem.scheme();
        ActivationKey model = s.activations() == ActivationFormat.NONE ? null : ActivationKey.of(s.activations());
        ActivationKey resolved = model;
        String source = "checkpoint";
        BackendChoice.ActivationOverride override = choice.activationOverrideFor(s.weights());
        if (override != null) {
            if (model != null && model != override.key()) {
                throw new MoeException(s.name() + ": checkpoint declares MoE activation=" + model + " but "
                        + override.source() + "; remove the override or align it with the checkpoint.");
            }
            resolved = override.key();
            source = override.source();
        }
        ActivationKey implied = choice.impliedActivation();
        if (implied != null) {
            if (resolved != null && resolved != implied) {
                throw new MoeException("backend " + choice.label() + " does not support activation=" + resolved + " ("
                        + (override != null ? override.source() : s.name() + " declares it") + "); it runs " + implied
                        + " activations only");
            }
            resolved = implied;
            source = choice.source() + " " + choice.requested();
        }
        if (resolved == null || resolved == ActivationKey.BF16 || model != null) {
            return new Request(problem, resolved == null ? ActivationKey.BF16 : resolved, false, source);
        }
        MoeProblem asked = resolved.dynamicFormat()
                .map(f -> new MoeProblem(new QuantScheme(s.name(), s.weights(), f, s.actOrder()), problem.hidden(),
                        problem.intermediate(), problem.numExperts(), problem.topK(), problem.activation(),
                        problem.expertParallel(), problem.splitActOrder(), problem.kernelActivations()))
                .orElse(problem);
        return new Request(asked, resolved, true, source);
    }
}

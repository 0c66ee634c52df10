package io.moe4j.backend.oracle;

import io.moe4j.backend.ActivationKey;
import io.moe4j.MoeException;
import io.moe4j.quant.WeightFormat;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * What the user asked for: a backend ({@code auto}, a moe4j name, or a vLLM {@code --moe-backend} name mapped to
 * the moe4j backend playing its role) and, optionally, the activation precision of the experts (the seed's
 * {@code quantization_config.moe.activation}).
 *
 * <p>Sources, strongest first: the command line, the system properties {@code moe4j.moe.backend} /
 * {@code moe4j.moe.activation} / {@code moe4j.mxfp4.activation}, the environment variables
 * {@code MOE4J_MOE_BACKEND} / {@code MOE4J_MOE_ACTIVATION} / {@code MOE4J_MXFP4_ACTIVATION}. The MXFP4 override
 * applies only to layers with MXFP4 weights (as the seed's applies only in its MXFP4 oracle) and wins there over
 * the general one.
 *
 * @param requested         the name as given, normalized ({@code auto} when nothing was asked)
 * @param backend           the moe4j backend it maps to, or null for auto
 * @param impliedActivation the activation precision the name implies (vLLM's {@code _afp8} aliases), or null
 * @param source            where the backend choice came from ({@code --backend}, {@code MOE4J_MOE_BACKEND}, ...)
 * @param activationOverrides the user's activation overrides, most specific first
 */
public record BackendChoice(String requested, String backend, ActivationKey impliedActivation, String source,
                            List<ActivationOverride> activationOverrides) {

    public static final String AUTO = "auto";
    public static final String BACKEND_ENV = "MOE4J_MOE_BACKEND";
    public static final String BACKEND_PROPERTY = "moe4j.moe.backend";
    public static final String ACTIVATION_ENV = "MOE4J_MOE_ACTIVATION";
    public static final String ACTIVATION_PROPERTY = "moe4j.moe.activation";
    public static final String MXFP4_ACTIVATION_ENV = "MOE4J_MXFP4_ACTIVATION";
    public static final String MXFP4_ACTIVATION_PROPERTY = "moe4j.mxfp4.activation";

    /** The moe4j backends a user can name. */
    public static final List<String> MOE4J_NAMES = List.of("cuda", "cpu", "emulation");

    /**
     * vLLM's {@code --moe-backend} names (its {@code MoEBackend} literal and the MXFP4 oracle's
     * {@code map_mxfp4_backend} keys) and what each means here, in the order {@code moe backends --help} lists them.
     */
    public static final Map<String, VllmName> VLLM_NAMES = vllmNames();

    /**
     * How moe4j reads one vLLM name: the moe4j backend playing its role (with the activation precision it implies),
     * or null with the reason it is refused.
     */
    public record VllmName(String vllmName, String backend, ActivationKey impliedActivation, String role) {
        public boolean refused() {
            return backend == null;
        }
    }

    /**
     * A user's activation precision for the experts.
     *
     * @param onlyFor the weight format it is limited to (MXFP4 for {@code MOE4J_MXFP4_ACTIVATION}), or null for all
     * @param source  e.g. {@code MOE4J_MOE_ACTIVATION=mxfp8}, for messages
     */
    public record ActivationOverride(ActivationKey key, WeightFormat onlyFor, String source) {
        public boolean appliesTo(WeightFormat weights) {
            return onlyFor == null || onlyFor == weights;
        }
    }

    public BackendChoice {
        activationOverrides = List.copyOf(activationOverrides);
    }

    public static BackendChoice auto() {
        return new BackendChoice(AUTO, null, null, "default", List.of());
    }

    /** Parses a {@code --backend} value. */
    /** The source of a backend a whole model names for its MoE layers (it says how it chose, once). */
    public static final String MODEL = "the whole model's backend";

    public static BackendChoice parse(String name) {
        return parse(name, "--backend");
    }

    /**
     * Parses a backend name: {@code auto}, {@code cuda}, {@code cpu}, {@code emulation}, or a vLLM
     * {@code --moe-backend} name (case-insensitive, '-' read as '_'). Refuses an unknown name, or a vLLM name with no
     * moe4j counterpart (AMD's AITER, Intel's XPU), listing what is accepted.
     */
    public static BackendChoice parse(String name, String source) {
        String n = normalize(name);
        if (n.isEmpty() || n.equals(AUTO)) {
            return new BackendChoice(AUTO, null, null, source, List.of());
        }
        if (MOE4J_NAMES.contains(n)) {
            return new BackendChoice(n, n, null, source, List.of());
        }
        VllmName v = VLLM_NAMES.get(n);
        if (v == null) {
            throw new MoeException("unknown MoE backend '" + name + "' (" + source + "); choose " + choices());
        }
        if (v.refused()) {
            throw new MoeException("MoE backend '" + name + "' (" + source + ") " + v.role() + "; choose " + choices());
        }
        return new BackendChoice(n, v.backend(), v.impliedActivation(), source, List.of());
    }

    /** What {@code --backend} accepts, for messages and help. */
    public static String choices() {
        List<String> vllm = new ArrayList<>();
        VLLM_NAMES.forEach((k, v) -> {
            if (!v.refused() && !MOE4J_NAMES.contains(k)) {
                vllm.add(k);
            }
        });
        return "auto, " + String.join(", ", MOE4J_NAMES) + ", or a vLLM --moe-backend name (" + String.join(", ", vllm)
                + ")";
    }

    /** This choice with an activation override from the command line (null or blank: unchanged). */
    public BackendChoice withActivation(String value, String source) {
        if (value == null || value.isBlank()) {
            return this;
        }
        ActivationKey k = ActivationKey.parse(value, source);
        return new BackendChoice(requested, backend, impliedActivation, this.source,
                List.of(new ActivationOverride(k, null, source + "=" + k)));
    }

    /** The choice from the system properties and environment only. */
    public static BackendChoice fromEnvironment() {
        return resolve(null, null, System.getenv(), System.getProperties());
    }

    /**
     * The user's choice: the command line's {@code --backend} / {@code --activation} when given, else the system
     * properties, else the environment variables. A {@code --backend} of null, blank or {@code auto} counts as not
     * given, so that the environment still applies under auto (as the seed's environment overrides apply only when
     * {@code moe_backend} is {@code auto}).
     */
    public static BackendChoice resolve(String cliBackend, String cliActivation, Map<String, String> env,
                                        Properties properties) {
        return resolve(cliBackend, "--backend", cliActivation, env, properties);
    }

    /** {@link #resolve(String, String, Map, Properties)} with the backend named by {@code source}. */
    public static BackendChoice resolve(String cliBackend, String source, String cliActivation,
                                        Map<String, String> env, Properties properties) {
        BackendChoice choice;
        if (cliBackend != null && !normalize(cliBackend).isEmpty() && !normalize(cliBackend).equals(AUTO)) {
            choice = parse(cliBackend, source);
        } else if (properties.getProperty(BACKEND_PROPERTY) != null) {
            choice = parse(properties.getProperty(BACKEND_PROPERTY), "-D" + BACKEND_PROPERTY);
        } else if (env.get(BACKEND_ENV) != null && !env.get(BACKEND_ENV).isBlank()) {
            choice = parse(env.get(BACKEND_ENV), BACKEND_ENV);
        } else {
            choice = auto();
        }
        if (cliActivation != null && !cliActivation.isBlank()) {
            return choice.withActivation(cliActivation, "--activation");
        }
        List<ActivationOverride> overrides = new ArrayList<>();
        addOverride(overrides, WeightFormat.MXFP4, properties.getProperty(MXFP4_ACTIVATION_PROPERTY),
                "-D" + MXFP4_ACTIVATION_PROPERTY, env.get(MXFP4_ACTIVATION_ENV), MXFP4_ACTIVATION_ENV);
        addOverride(overrides, null, properties.getProperty(ACTIVATION_PROPERTY), "-D" + ACTIVATION_PROPERTY,
                env.get(ACTIVATION_ENV), ACTIVATION_ENV);
        return new BackendChoice(choice.requested, choice.backend, choice.impliedActivation, choice.source, overrides);
    }

    private static void addOverride(List<ActivationOverride> out, WeightFormat onlyFor, String property,
                                    String propertyName, String env, String envName) {
        String value = property != null && !property.isBlank() ? property : env;
        String where = property != null && !property.isBlank() ? propertyName : envName;
        if (value != null && !value.isBlank()) {
            ActivationKey k = ActivationKey.parse(value, where);
            out.add(new ActivationOverride(k, onlyFor, where + "=" + k));
        }
    }

    public boolean isAuto() {
        return backend == null;
    }

    /** The user's activation override for a layer with these weights, or null. */
    public ActivationOverride activationOverrideFor(WeightFormat weights) {
        for (ActivationOverride o : activationOverrides) {
            if (o.appliesTo(weights)) {
                return o;
            }
        }
        return null;
    }

    /** How messages name the choice: {@code flashinfer_trtllm (moe4j: cuda)}, {@code cpu (set by MOE4J_MOE_BACKEND)}. */
    public String label() {
        List<String> notes = new ArrayList<>();
        if (backend != null && !backend.equals(requested)) {
            notes.add("moe4j: " + backend);
        }
        if (!source.equals("--backend") && !source.equals("default") && !source.equals(MODEL)) {
            notes.add("set by " + source);
        }
        return notes.isEmpty() ? requested : requested + " (" + String.join(", ", notes) + ")";
    }

    static String normalize(String name) {
        return name == null ? "" : name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
    }

    private static Map<String, VllmName> vllmNames() {
        Map<String, VllmName> m = new LinkedHashMap<>();
        String gpu = "an NVIDIA GPU kernel library: moe4j's CUDA backend plays its role";
        for (String n : List.of("triton", "triton_unfused", "marlin", "batched_marlin", "deep_gemm",
                "deep_gemm_mega_moe", "cutlass", "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_cutedsl",
                "flashinfer_b12x", "humming", "sm70_skinny")) {
            m.put(n, new VllmName(n, "cuda", null, gpu));
        }
        for (String n : List.of("flashinfer_trtllm_afp8", "flashinfer_cutlass_afp8")) {
            m.put(n, new VllmName(n, "cuda", ActivationKey.MXFP8,
                    "FlashInfer with MXFP8 activations: moe4j's CUDA backend with mxfp8 activations"));
        }
        m.put("cpu", new VllmName("cpu", "cpu", null, "vLLM's CPU kernels: moe4j's Vector API backend"));
        m.put("emulation", new VllmName("emulation", "emulation", null, "the exact reference"));
        m.put("naive", new VllmName("naive", "emulation", null, "the plain unfused reference: moe4j's emulation"));
        m.put("torch", new VllmName("torch", "emulation", null, "the plain unfused reference: moe4j's emulation"));
        String rocm = "is AMD ROCm's AITER kernel library; moe4j has no ROCm backend";
        for (String n : List.of("aiter", "aiter_mxfp4_fp8", "aiter_mxfp4_mxfp4")) {
            m.put(n, new VllmName(n, null, null, rocm));
        }
        m.put("xpu", new VllmName("xpu", null, null, "is Intel's XPU (GPU) kernel library; moe4j has no XPU backend"));
        return java.util.Collections.unmodifiableMap(m);
    }
}

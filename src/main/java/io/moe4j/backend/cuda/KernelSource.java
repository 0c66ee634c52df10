package io.moe4j.backend.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A CUDA C++ kernel source from this package's resources, with the headers it includes ({@code #include "x"},
 * resolved among the same resources and handed to NVRTC by name) and the extra compile options (defines) of a
 * variant.
 */
public record KernelSource(String name, String text, Map<String, String> headers, List<String> options) {
    private static final String RESOURCE_DIR = "/io/moe4j/backend/cuda/";
    private static final Pattern INCLUDE = Pattern.compile("^\\s*#\\s*include\\s+\"([^\"]+)\"", Pattern.MULTILINE);

    /**
     * The kernels that follow the overlapped launch protocol of moe4j_common.cuh (enter_after_prior_grid before
     * touching what an earlier kernel of the call wrote): the experts pipeline's graph-replayed kernels. Only these are recorded as overlapped launches; adding a name here is a claim about its source.
     */
    private static final Set<String> OVERLAP_READY = Set.of("moe_copy_in", "moe_prepare_rows", "moe_activate_rows",
            "moe_activate_elements", "moe_combine", "moe_gemv_mxfp4_mma", "moe_gemv_mxfp4_mma_pieces",
            "moe_gemm_units", "moe_gemv_units", "moe_gemm_mxfp4_tile", "moe_gemm_mxfp4_wgmma",
            "model_embed", "model_rms_norm", "model_rms_norm_qdq", "model_linear_bf16", "model_position_rows",
            "model_attend_rows", "model_mla_position_rows", "model_mla_store_rows", "model_attend_latent_rows",
            "model_silu_mul", "model_fill_choices", "model_router_logits", "model_norm_router_logits", "moe_router_select",
            "moe_route_plan", "model_gather_rows", "model_linear_bf16_r1", "model_linear_bf16_r2",
            "model_linear_bf16_r4", "model_linear_bf16_r8", "model_linear_bf16_staged", "model_linear_bf16_mma",
            "model_linear_bf16_mma_split", "model_linear_slices", "model_argmax");

    /** Whether the kernel {@code name} follows the overlapped launch protocol (see {@link #OVERLAP_READY}). */
    static boolean overlapReady(String kernel) {
        return OVERLAP_READY.contains(kernel);
    }

    public KernelSource {
        headers = Map.copyOf(headers);
        options = List.copyOf(options);
    }

    /** Loads {@code file} (e.g. "gemv_mxfp4_mma.cu") and, transitively, the headers it includes. */
    public static KernelSource resource(String file, List<String> options) {
        String text = read(file);
        Map<String, String> headers = new LinkedHashMap<>();
        collectHeaders(text, headers);
        return new KernelSource(file, text, headers, options);
    }

    private static void collectHeaders(String text, Map<String, String> into) {
        Matcher m = INCLUDE.matcher(text);
        while (m.find()) {
            String header = m.group(1);
            if (!into.containsKey(header)) {
                String body = read(header);
                into.put(header, body);
                collectHeaders(body, into);
            }
        }
    }

    private static String read(String file) {
        try (InputStream in = KernelSource.class.getResourceAsStream(RESOURCE_DIR + file)) {
            if (in == null) {
                throw new IllegalArgumentException("no kernel resource " + RESOURCE_DIR + file);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("reading kernel resource " + file, e);
        }
    }
}

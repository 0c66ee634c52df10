package io.moe4j.bench.model;

/**
 * How much of a real model the bench writes and loads on a machine: the CPU backend repacks every weight it runs
 * into its own memory, so the model as run must fit a budget of the machine's memory. Layers and experts that the
 * user names are kept; otherwise the most layers that fit, and for a model whose one MoE layer alone exceeds the
 * budget (DeepSeek-V3: 256 experts of 44 MB each), fewer experts so that at least one MoE layer is run.
 */
public final class MemoryFit {
    private MemoryFit() {
    }

    /**
     * @param layers  layers asked for, or null for the most that fit
     * @param experts experts asked for, or null for the model's (fewer where even one MoE layer does not fit)
     * @param budget  bytes the model as run may hold
     */
    public static ModelShape fit(ModelShape full, Integer layers, Integer experts, long budget) {
        ModelShape s = experts == null ? full : full.withExperts(experts);
        if (layers != null) {
            return s.withLayers(layers);
        }
        int n = fittingLayers(s, budget);
        if (experts == null && n <= s.firstDense() && s.firstDense() < s.fullLayers()) {
            // not one MoE layer fits: run one with as many experts as fit (a token's top-k read the same bytes)
            ModelShape withMoe = s.withLayers(s.firstDense() + 1);
            int step = s.family() == ModelShape.Family.DEEPSEEK_V3 ? 8 : 1;
            int e = s.experts() / step * step;
            while (e - step >= Math.max(s.topK(), step)
                    && SyntheticModel.checkpointBytes(withMoe.withExperts(e)) > budget) {
                e -= step;
            }
            return withMoe.withExperts(e);
        }
        return s.withLayers(n);
    }

    private static int fittingLayers(ModelShape s, long budget) {
        int n = 1;
        while (n < s.fullLayers() && SyntheticModel.checkpointBytes(s.withLayers(n + 1)) <= budget) {
            n++;
        }
        return n;
    }

    /** The default budget: 30% of the machine's physical memory (other programs and the page cache need the rest). */
    public static long defaultBudget() {
        var os = (com.sun.management.OperatingSystemMXBean) java.lang.management.ManagementFactory
                .getOperatingSystemMXBean();
        return (long) (os.getTotalMemorySize() * 0.3);
    }
}

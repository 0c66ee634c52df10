package io.moe4j.layer;

/**
 * Which layer of an expert-parallel set adds the shared experts. A layer that holds a slice of the routed experts
 * ({@link MoeLayerOptions#localExperts()}) contributes a partial output, and the partial outputs of the slices are
 * summed into the layer's output; the shared experts (DeepSeek-V3, Llama-4) run on every token, so exactly one slice
 * must add them or the sum counts them once per slice.
 */
public enum SharedExperts {
    /**
     * The default: added by the layer that holds global expert 0, which is exactly one layer of any partition of the
     * experts, and every layer that holds all of them.
     */
    WITH_EXPERT_ZERO,
    /** Always added, whatever experts the layer holds. */
    ADD,
    /** Never added (nor loaded): they run elsewhere, e.g. on the rank that owns the token. */
    SKIP;

    /** Whether a layer holding {@code localExperts} (null: all) adds the shared experts. */
    public boolean addedBy(int[] localExperts) {
        return switch (this) {
            case ADD -> true;
            case SKIP -> false;
            case WITH_EXPERT_ZERO -> {
                if (localExperts == null) {
                    yield true;
                }
                for (int e : localExperts) {
                    if (e == 0) {
                        yield true;
                    }
                }
                yield false;
            }
        };
    }
}

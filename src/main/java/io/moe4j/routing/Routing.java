package io.moe4j.routing;

/**
 * The router's decision for a batch: for token t, its j-th choice is expert {@code ids[t·k + j]} with weight
 * {@code weights[t·k + j]}; each token's choices are sorted by expert id.
 *
 * @param weightOnInput the weight scales the token before the expert (Llama-4) instead of the expert's output
 */
public record Routing(int tokens, int topK, int[] ids, float[] weights, boolean weightOnInput) {

    public Routing {
        if (ids.length != tokens * topK || weights.length != tokens * topK) {
            throw new IllegalArgumentException("routing arrays must hold tokens × top-k = " + tokens * topK + " entries");
        }
    }

    public int expert(int token, int choice) {
        return ids[token * topK + choice];
    }

    public float weight(int token, int choice) {
        return weights[token * topK + choice];
    }
}

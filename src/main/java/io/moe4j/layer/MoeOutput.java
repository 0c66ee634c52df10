package io.moe4j.layer;

import io.moe4j.routing.Routing;

/**
 * One forward call's result.
 *
 * @param output  the MoE block output [T, H] (routed experts plus shared experts; no residual)
 * @param routing the router's choice, each token's experts sorted by id
 */
public record MoeOutput(int tokens, int hidden, float[] output, Routing routing) {
}

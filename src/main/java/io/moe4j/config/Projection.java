package io.moe4j.config;

/** The three projections of a gated expert MLP. */
public enum Projection {
    GATE, UP, DOWN
}

package io.moe4j.model;

/** The attention of one decoder layer, as its family and config define it. */
public sealed interface AttentionSpec permits GqaSpec, MlaSpec {
    int heads();
}

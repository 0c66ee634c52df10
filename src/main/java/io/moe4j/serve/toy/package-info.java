/**
 * A deterministic toy model and byte-level text side that implement the serve interfaces, so the scheduler and the
 * HTTP API can be tested (and tried with {@code moe serve --model toy}) without a checkpoint.
 */
package io.moe4j.serve.toy;

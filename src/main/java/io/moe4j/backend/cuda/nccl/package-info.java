/**
 * A small typed FFM binding of NCCL ({@code libnccl.so.2}), the collectives library that moves tensors between the
 * GPUs of a host: communicators for the GPUs of one process (one device per thread) or one process per GPU,
 * all-reduce, all-gather, and grouped send/receive, the building block of expert parallelism's all-to-all dispatch
 * and combine. In the style of {@code io.moe4j.backend.cuda.driver}: located on the machine without configuration,
 * a clear error naming what was looked for when absent, errors named by NCCL itself, resources closed by their owner.
 */
package io.moe4j.backend.cuda.nccl;

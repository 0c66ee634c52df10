/**
 * Off-heap memory for the engine's large buffers: {@link io.moe4j.memory.UnzeroedMemory} hands out memory the
 * caller overwrites whole (no zeroing pass), on huge pages where the kernel allows them. Depends on no other io.moe4j
 * package.
 */
package io.moe4j.memory;

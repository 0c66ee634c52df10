package io.moe4j.backend.cuda.nccl;

import java.util.Optional;

/**
 * Whether NCCL can be used here, and why not when it cannot.
 *
 * @param available whether the library loaded
 * @param reason    "NCCL 2.30.7 from /path/libnccl.so.2", or what was looked for and why it failed
 * @param nccl      the binding when available
 */
public record NcclProbe(boolean available, String reason, Optional<Nccl> nccl) {
}

package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.nccl.NcclComm;
import io.moe4j.layer.ExpertPlacement;

/**
 * One rank of an expert-parallel model: the device it runs on, its communicator with the other ranks, and which of
 * each MoE layer's routed experts it holds (rank r of N: the r-th contiguous slice,
 * {@link ExpertPlacement#contiguous}).
 *
 * @param rank  this rank, 0 ≤ rank < ranks (the communicator's rank)
 * @param ranks how many ranks share the experts
 * @param comm  the NCCL communicator of this rank, on {@code comm.device()}
 */
record ExpertShard(int rank, int ranks, NcclComm comm) {

    ExpertShard {
        if (ranks < 2 || rank < 0 || rank >= ranks) {
            throw new IllegalArgumentException("rank " + rank + " of " + ranks + " (an expert-parallel model has at"
                    + " least two ranks)");
        }
    }

    /** The CUDA ordinal this rank runs on. */
    int device() {
        return comm.device();
    }

    /** The global ids of the routed experts this rank holds, of a layer with {@code experts} of them. */
    int[] localExperts(int experts) {
        return ExpertPlacement.contiguous(experts, ranks).localExperts(rank);
    }
}

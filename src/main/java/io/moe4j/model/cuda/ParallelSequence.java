package io.moe4j.model.cuda;

import io.moe4j.model.SequenceState;
import io.moe4j.model.TokenDraw;

/**
 * A sequence of an {@link ExpertParallelModel}: a {@link DeviceSequence} on its home rank, whose every pass runs in
 * lockstep with the other ranks (they join its MoE layers' exchanges with no rows of their own).
 */
final class ParallelSequence implements SequenceState {
    private final ExpertParallelModel model;
    private final int rank;
    private final DeviceSequence inner;
    private boolean closed;

    ParallelSequence(ExpertParallelModel model, int rank, DeviceSequence inner) {
        this.model = model;
        this.rank = rank;
        this.inner = inner;
    }

    /** The rank this sequence lives on. */
    int rank() {
        return rank;
    }

    /** The sequence on its rank's device. */
    DeviceSequence inner() {
        return inner;
    }

    boolean belongsTo(ExpertParallelModel m) {
        return model == m;
    }

    @Override
    public float[] forward(int[] tokens, long start, boolean allLogits) {
        return model.lockstep(rank, tokens.length, () -> inner.forward(tokens, start, allLogits));
    }

    @Override
    public int forwardGreedy(int[] tokens, long start) {
        return model.lockstep(rank, tokens.length, () -> inner.forwardGreedy(tokens, start));
    }

    @Override
    public int forwardDrawn(int[] tokens, long start, TokenDraw draw) {
        return model.lockstep(rank, tokens.length, () -> inner.forwardDrawn(tokens, start, draw));
    }

    @Override
    public void reset() {
        inner.reset();
    }

    @Override
    public boolean rewind(long position) {
        return inner.rewind(position);
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            model.onRank(rank, () -> {
                inner.close();
                return null;
            });
        } finally {
            model.sequenceClosed(rank);
        }
    }
}

package io.moe4j.serve;

import io.moe4j.model.Model;
import io.moe4j.model.Session;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;

import java.util.ArrayList;
import java.util.List;

/** A loaded decoder as the scheduler steps it: a sequence is a {@link Session}; a step runs them in one batch. */
public final class ModelSteps implements StepModel {
    private final Model model;

    public ModelSteps(Model model) {
        this.model = model;
    }

    @Override
    public int vocabSize() {
        return model.vocabSize();
    }

    @Override
    public int contextLength() {
        return model.contextLimit();
    }

    @Override
    public Sequence open() {
        return new SessionSequence(model.newSession());
    }

    @Override
    public float[][] step(List<Sequence> sequences, List<int[]> tokens) {
        return model.step(sessions(sequences), tokens);
    }

    @Override
    public StepOutput step(List<Sequence> sequences, List<int[]> tokens, TokenDraw[] draws) {
        return model.step(sessions(sequences), tokens, draws);
    }

    @Override
    public float[] stepEveryRow(Sequence sequence, int[] tokens) {
        return ((SessionSequence) sequence).session.forward(tokens, true);
    }

    private static List<Session> sessions(List<Sequence> sequences) {
        List<Session> sessions = new ArrayList<>(sequences.size());
        for (Sequence s : sequences) {
            sessions.add(((SessionSequence) s).session);
        }
        return sessions;
    }

    private record SessionSequence(Session session) implements Sequence {
        @Override
        public int length() {
            return (int) session.position();
        }

        @Override
        public boolean rewind(int length) {
            return session.rewind(length);
        }

        @Override
        public Sequence fork(int length) {
            Session copy = session.fork(length);
            return copy == null ? null : new SessionSequence(copy);
        }

        @Override
        public void keepForRewind(int positions) {
            session.keepForRewind(positions);
        }

        @Override
        public void close() {
            session.close();
        }
    }
}

package io.moe4j.serve.toy;

import io.moe4j.MoeException;
import io.moe4j.serve.StepModel;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * A deterministic stand-in for a decoder, for testing the scheduler and the server: a sequence's "KV cache" is a hash
 * of every token it holds, and its logits are a function of that hash alone. So greedy answers are reproducible and
 * depend on each sequence's own history only, never on what else shares its batch, exactly the property a batched
 * step of a real model must have.
 *
 * <p>Logits favour lowercase letters, space, comma and period (hash-valued in [0, 1)); eos wins when the hash is
 * divisible by {@code eosPeriod} (0: never); every other id sits at -10. A step can cost simulated time: a fixed part
 * per call plus a part per token fed, so that batching shows in throughput.
 */
public final class ToyModel implements StepModel {
    private static final String FAVOURED = "abcdefghijklmnopqrstuvwxyz ,.";

    private final int contextLength;
    private final int eosPeriod;
    private final long nanosPerStep;
    private final long nanosPerToken;
    private final AtomicInteger open = new AtomicInteger();
    private final AtomicInteger largestBatch = new AtomicInteger();
    private final AtomicInteger forks = new AtomicInteger();

    public ToyModel(int contextLength, int eosPeriod, long nanosPerStep, long nanosPerToken) {
        if (contextLength < 2) {
            throw new IllegalArgumentException("context length must be >= 2, got " + contextLength);
        }
        this.contextLength = contextLength;
        this.eosPeriod = eosPeriod;
        this.nanosPerStep = nanosPerStep;
        this.nanosPerToken = nanosPerToken;
    }

    @Override
    public int vocabSize() {
        return ByteText.VOCAB_SIZE;
    }

    @Override
    public int contextLength() {
        return contextLength;
    }

    /** Sequences made by forking another. */
    public int forks() {
        return forks.get();
    }

    /** Sequences opened and not yet closed (a leak shows here). */
    public int openSequences() {
        return open.get();
    }

    /** The most sequences one step has carried. */
    public int largestBatch() {
        return largestBatch.get();
    }

    @Override
    public Sequence open() {
        open.incrementAndGet();
        return new ToySequence();
    }

    @Override
    public float[][] step(List<Sequence> sequences, List<int[]> tokens) {
        if (sequences.size() != tokens.size() || sequences.isEmpty()) {
            throw new IllegalArgumentException("a step needs one token run per sequence, got " + sequences.size()
                    + " sequences and " + tokens.size() + " runs");
        }
        largestBatch.accumulateAndGet(sequences.size(), Math::max);
        long fed = 0;
        float[][] logits = new float[sequences.size()][];
        for (int i = 0; i < sequences.size(); i++) {
            ToySequence s = (ToySequence) sequences.get(i);
            int[] run = tokens.get(i);
            if (s.closed) {
                throw new MoeException("sequence " + i + " of the step was already closed");
            }
            if (run.length == 0 || s.length + run.length > contextLength) {
                throw new MoeException("sequence " + i + " holds " + s.length + " tokens; " + run.length
                        + " more do not fit the context of " + contextLength);
            }
            for (int t : run) {
                if (t < 0 || t >= ByteText.VOCAB_SIZE) {
                    throw new MoeException("token id " + t + " is outside the vocabulary");
                }
                s.hash = mix(s.hash ^ t);
                s.remember();
            }
            fed += run.length;
            logits[i] = logits(s.hash);
        }
        long cost = nanosPerStep + nanosPerToken * fed;
        if (cost > 0) {
            LockSupport.parkNanos(cost);
        }
        return logits;
    }

    /** Token by token: the toy's logits depend on the hash after each one alone. */
    @Override
    public float[] stepEveryRow(Sequence sequence, int[] tokens) {
        int vocab = ByteText.VOCAB_SIZE;
        float[] rows = new float[tokens.length * vocab];
        for (int t = 0; t < tokens.length; t++) {
            float[] row = step(List.of(sequence), List.of(new int[] {tokens[t]}))[0];
            System.arraycopy(row, 0, rows, t * vocab, vocab);
        }
        return rows;
    }

    private float[] logits(long hash) {
        float[] row = new float[ByteText.VOCAB_SIZE];
        java.util.Arrays.fill(row, -10f);
        for (int i = 0; i < FAVOURED.length(); i++) {
            int id = FAVOURED.charAt(i);
            row[id] = (mix(hash + id) >>> 40) / (float) (1L << 24);
        }
        boolean end = eosPeriod > 0 && Long.remainderUnsigned(hash, eosPeriod) == 0;
        row[ByteText.EOS] = end ? 2f : -5f;
        return row;
    }

    /** SplitMix64's finalizer: a cheap, well-spread 64-bit mix. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    private final class ToySequence implements Sequence {
        private static final long START = 0x6a09e667f3bcc909L;
        long hash = START;
        int length;
        boolean closed;
        /** The hash after each position, so that a rewind finds the state it goes back to. */
        private long[] hashes = new long[16];

        void remember() {
            if (length == hashes.length) {
                hashes = java.util.Arrays.copyOf(hashes, 2 * length);
            }
            hashes[length++] = hash;
        }

        @Override
        public int length() {
            return length;
        }

        @Override
        public boolean rewind(int to) {
            if (to < 0 || to > length) {
                return false;
            }
            length = to;
            hash = to == 0 ? START : hashes[to - 1];
            return true;
        }

        @Override
        public Sequence fork(int to) {
            if (to < 0 || to > length || closed) {
                return null;
            }
            open.incrementAndGet();
            forks.incrementAndGet();
            ToySequence copy = new ToySequence();
            copy.hashes = java.util.Arrays.copyOf(hashes, Math.max(16, to));
            copy.length = to;
            copy.hash = to == 0 ? START : hashes[to - 1];
            return copy;
        }

        @Override
        public void close() {
            if (!closed) {
                closed = true;
                open.decrementAndGet();
            }
        }
    }
}

package io.moe4j.model.cuda;

import io.moe4j.MoeException;
import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.nccl.Nccl;
import io.moe4j.backend.cuda.nccl.NcclComm;
import io.moe4j.backend.cuda.nccl.NcclProbe;
import io.moe4j.model.DecoderConfig;
import io.moe4j.model.DecoderRuntime;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.SequenceState;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;
import io.moe4j.safetensors.Checkpoint;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.stream.IntStream;

/**
 * A decoder spread over the GPUs of one host with expert parallelism ({@code --gpus N}): rank r on device r holds
 * the whole model except the routed experts, of which it holds the r-th contiguous slice of every MoE layer
 * ({@link ExpertShard}). Attention is data-parallel: each sequence lives on one rank (the one with the fewest at its
 * start), with its KV cache there only. At each MoE layer the ranks exchange rows through NCCL
 * ({@link ExpertExchange}); a rank without rows in a pass joins the exchange with none ({@link ExpertFollower}).
 *
 * <p>A pass runs in lockstep on every rank, each on its own thread ({@link RankThreads}), one pass at a time. When
 * any rank fails the communicators are aborted (so no rank waits forever on a collective) and the model refuses
 * further passes, naming the first failure.
 */
public final class ExpertParallelModel implements DecoderRuntime {

    /** One rank's model, its follower, and how many sequences live on it. */
    private static final class Rank {
        final int index;
        DeviceModel model;
        ExpertFollower follower;
        int sequences;

        Rank(int index) {
            this.index = index;
        }

        /** {@code work} with this rank's device context current on the thread that runs it. */
        <T> Callable<T> current(Callable<T> work) {
            return () -> {
                if (model != null) {
                    model.makeCurrent();
                }
                return work.call();
            };
        }
    }

    private final List<Rank> ranks;
    private final List<NcclComm> comms;
    private final RankThreads threads;

    private ExpertParallelModel(List<Rank> ranks, List<NcclComm> comms) {
        this.ranks = ranks;
        this.comms = comms;
        this.threads = new RankThreads(ranks.size(), "moe4j-gpu-rank-", this::abortAll);
    }

    /**
     * Loads the model over devices 0..{@code options.gpus()} − 1. Fails by name when the machine has fewer devices,
     * when NCCL cannot be found, or when a MoE layer has fewer routed experts than ranks.
     */
    public static ExpertParallelModel load(DecoderConfig config, Checkpoint checkpoint, ModelOptions options,
                                           int contextLimit) {
        int n = options.gpus();
        CudaProbe cuda = CudaRuntime.probe();
        if (!cuda.available()) {
            throw new MoeException("unsupported on cuda: no usable CUDA device (" + cuda.reason() + ")");
        }
        if (cuda.deviceCount() < n) {
            throw new MoeException("--gpus " + n + ": this machine has " + cuda.deviceCount() + " CUDA device"
                    + (cuda.deviceCount() == 1 ? "" : "s"));
        }
        NcclProbe probe = Nccl.probe();
        Nccl nccl = probe.nccl().orElseThrow(() -> new MoeException("--gpus " + n + " exchanges experts' rows"
                + " through NCCL, which is not available: " + probe.reason()));
        for (var spec : config.layers()) {
            if (spec.isMoe()) {
                int experts = config.model().layer(spec.index()).numExperts();
                if (experts < n) {
                    throw new MoeException("--gpus " + n + ": layer " + spec.index() + " has " + experts
                            + " routed experts, fewer than the GPUs to spread them over");
                }
            }
        }
        List<NcclComm> comms = NcclComm.initAll(nccl, IntStream.range(0, n).toArray());
        List<Rank> ranks = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            ranks.add(new Rank(r));
        }
        ExpertParallelModel model = new ExpertParallelModel(ranks, comms);
        try {
            int layers = config.layers().size();
            for (Rank rank : ranks) {
                // one rank after another: the load listener (a progress bar) is told in order, across all ranks
                ModelOptions told = options.withLoadListener((done, of) -> options.loadListener()
                        .layerLoaded(rank.index * layers + done, n * layers));
                ExpertShard shard = new ExpertShard(rank.index, n, comms.get(rank.index));
                rank.model = model.threads.on(rank.index,
                        () -> DeviceModel.load(config, checkpoint, told, contextLimit, shard));
                rank.follower = model.threads.on(rank.index, rank.current(() -> new ExpertFollower(rank.model)));
            }
            return model;
        } catch (RuntimeException e) {
            try {
                model.close();
            } catch (RuntimeException c) {
                e.addSuppressed(c);
            }
            throw e;
        }
    }

    /** How many GPUs the experts are spread over. */
    public int gpus() {
        return ranks.size();
    }

    @Override
    public synchronized SequenceState newSequence() {
        Rank home = ranks.getFirst();
        for (Rank r : ranks) {
            if (r.sequences < home.sequences) {
                home = r;
            }
        }
        Rank rank = home;
        DeviceSequence inner = threads.on(rank.index, rank.current(() -> new DeviceSequence(rank.model)));
        rank.sequences++;
        return new ParallelSequence(this, rank.index, inner);
    }

    /**
     * Runs {@code work} (a pass of {@code rows} rows on rank {@code home}) while every other rank follows with none;
     * returns its result.
     */
    synchronized <T> T lockstep(int home, int rows, Callable<T> work) {
        List<Callable<?>> each = new ArrayList<>();
        for (Rank r : ranks) {
            each.add(r.index == home ? work : null);
        }
        @SuppressWarnings("unchecked")
        T result = (T) onEveryRank(each, rows).get(home);
        return result;
    }

    /**
     * Runs {@code work.get(r)} on rank r, or where it is null lets rank r follow with no rows of its own, every rank
     * bringing {@code rows} rows to the exchanges; returns each rank's result (null for followers).
     */
    private List<Object> onEveryRank(List<Callable<?>> work, int rows) {
        List<Callable<?>> each = new ArrayList<>();
        for (Rank r : ranks) {
            Callable<?> w = work.get(r.index);
            each.add(r.current(w != null ? w : () -> {
                r.follower.follow(rows);
                return null;
            }));
        }
        return threads.onEvery(each);
    }

    /**
     * One step of several sequences: each rank runs its own sequences as one batch ({@link DeviceBatch}), every rank
     * bringing the largest rank's row count to the exchanges (the others padded), a rank without sequences following.
     */
    @Override
    public synchronized StepOutput step(List<SequenceState> sequences, List<int[]> tokens, long[] starts,
                                        TokenDraw[] draws) {
        List<List<Integer>> byRank = new ArrayList<>();
        for (int r = 0; r < ranks.size(); r++) {
            byRank.add(new ArrayList<>());
        }
        int[] rows = new int[ranks.size()];
        for (int i = 0; i < sequences.size(); i++) {
            if (!(sequences.get(i) instanceof ParallelSequence p) || !p.belongsTo(this)) {
                return DecoderRuntime.super.step(sequences, tokens, starts, draws);
            }
            byRank.get(p.rank()).add(i);
            rows[p.rank()] += tokens.get(i).length;
        }
        int perRank = Arrays.stream(rows).max().orElse(0);
        List<Callable<?>> work = new ArrayList<>();
        for (Rank r : ranks) {
            List<Integer> mine = byRank.get(r.index);
            if (mine.isEmpty()) {
                work.add(null);
                continue;
            }
            List<DeviceSequence> inner = new ArrayList<>();
            List<int[]> t = new ArrayList<>();
            long[] at = new long[mine.size()];
            TokenDraw[] d = new TokenDraw[mine.size()];
            for (int j = 0; j < mine.size(); j++) {
                int i = mine.get(j);
                inner.add(((ParallelSequence) sequences.get(i)).inner());
                t.add(tokens.get(i));
                at[j] = starts[i];
                d[j] = draws[i];
            }
            work.add(() -> r.model.batch().step(inner, t, at, d, perRank));
        }
        List<Object> results = onEveryRank(work, perRank);
        float[][] logits = new float[sequences.size()][];
        int[] drawn = new int[sequences.size()];
        for (Rank r : ranks) {
            List<Integer> mine = byRank.get(r.index);
            if (!mine.isEmpty()) {
                StepOutput out = (StepOutput) results.get(r.index);
                for (int j = 0; j < mine.size(); j++) {
                    logits[mine.get(j)] = out.logits()[j];
                    drawn[mine.get(j)] = out.drawn()[j];
                }
            }
        }
        return new StepOutput(logits, drawn);
    }

    private void abortAll() {
        for (NcclComm c : comms) {
            try {
                c.abort();
            } catch (RuntimeException ignored) {
                // aborting is best effort: the failure being reported is the one that matters
            }
        }
    }

    /**
     * A sequence's own work on its rank's thread (closing), with no collective; on this thread, its device current,
     * once the model has closed or failed (a session closed after its model, or after a failed pass).
     */
    synchronized <T> T onRank(int rank, Callable<T> work) {
        Rank r = ranks.get(rank);
        if (threads.isClosed() || threads.failure() != null) {
            try {
                return r.current(work).call();
            } catch (Exception e) {
                throw e instanceof RuntimeException re ? re : new MoeException(e.toString(), e);
            }
        }
        return threads.on(rank, r.current(work));
    }

    synchronized void sequenceClosed(int rank) {
        ranks.get(rank).sequences--;
    }

    @Override
    public String describe() {
        StringBuilder b = new StringBuilder("expert-parallel over " + ranks.size() + " GPUs (NCCL all-gather and"
                + " reduce-scatter at each MoE layer, attention data-parallel)");
        for (Rank r : ranks) {
            if (r.model != null) {
                b.append("; rank ").append(r.index).append(": ").append(r.model.describe());
            }
        }
        return b.toString();
    }

    @Override
    public synchronized void close() {
        if (threads.isClosed()) {
            return;
        }
        RuntimeException failed = new RuntimeException("closing the expert-parallel model");
        List<Callable<?>> release = new ArrayList<>();
        for (Rank r : ranks) {
            release.add(r.current(() -> {
                if (r.follower != null) {
                    r.follower.close();
                }
                if (r.model != null) {
                    r.model.close();
                }
                return null;
            }));
        }
        threads.finallyOnEach(release, failed);
        threads.close();
        for (NcclComm c : comms) {
            try {
                if (threads.failure() != null) {
                    c.abort();
                } else {
                    c.close();
                }
            } catch (RuntimeException e) {
                failed.addSuppressed(e);
            }
        }
        if (failed.getSuppressed().length > 0) {
            throw failed;
        }
    }
}

package io.moe4j.model.cuda;

import io.moe4j.backend.cuda.driver.CudaProbe;
import io.moe4j.backend.cuda.driver.CudaRuntime;
import io.moe4j.backend.cuda.nccl.ExchangeTiming;
import io.moe4j.backend.cuda.nccl.Nccl;
import io.moe4j.config.ModelConfig;
import io.moe4j.model.Model;
import io.moe4j.model.ModelOptions;
import io.moe4j.model.Session;
import io.moe4j.model.StepOutput;
import io.moe4j.model.TokenDraw;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Batched decode of a whole model spread over 1, 2, 4 ... GPUs with expert parallelism ({@code --gpus N}): for each
 * device count and batch size, B sequences (spread over the GPUs, 4-token prompts in one step), then greedy decode
 * steps of one token each, timed (median); tokens/s against one GPU. Beside it, the exchange's collectives for the
 * same rows timed alone ({@link ExchangeTiming}, times the MoE layers) and NCCL's all-to-all of the same bytes.
 *
 * <p>{@code ExpertParallelModelBench DIR [gpus=1,2,4] [batches=64,512] [steps=5]}: DIR a checkpoint written by
 * {@code moe bench --model-preset qwen3-235b-a22b --layers L --write-only}; device counts beyond the machine's are
 * skipped.
 */
public final class ExpertParallelModelBench {
    private ExpertParallelModelBench() {
    }

    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        int[] gpus = ints(args.length > 1 ? args[1] : "1,2,4");
        int[] batches = ints(args.length > 2 ? args[2] : "64,512");
        int steps = args.length > 3 ? Integer.parseInt(args[3]) : 5;
        CudaProbe cuda = CudaRuntime.probe();
        Nccl nccl = Nccl.get();
        ModelConfig config = ModelConfig.load(dir);
        int moeLayers = 0;
        for (int l = 0; l < config.numLayers(); l++) {
            moeLayers += config.isMoeLayer(l) ? 1 : 0;
        }
        System.out.println(cuda.reason() + "; " + cuda.deviceCount() + " device(s); NCCL " + nccl.versionString()
                + "; " + dir.getFileName() + ": " + config.numLayers() + " layers, " + moeLayers + " MoE");
        System.out.printf("%4s %6s %10s %10s %7s %14s %8s %12s %9s%n", "N", "batch", "step ms", "tokens/s", "vs N=1",
                "exchange ms", "GB/s", "a2a ms", "a2a GB/s");
        double[] single = new double[batches.length];
        for (int n : gpus) {
            if (n > cuda.deviceCount()) {
                System.out.println("N=" + n + ": skipped, " + cuda.deviceCount() + " devices");
                continue;
            }
            long t0 = System.nanoTime();
            double[] stepMs = new double[batches.length];
            try (Model model = Model.load(dir, ModelOptions.defaults().withBackend(ModelOptions.CUDA).withThreads(4)
                    .withGpus(n))) {
                System.out.printf("N=%d loaded in %.1f s%n", n, (System.nanoTime() - t0) / 1e9);
                for (int b = 0; b < batches.length; b++) {
                    stepMs[b] = decodeStepMs(model, batches[b], steps);
                }
            }
            for (int b = 0; b < batches.length; b++) {
                int batch = batches[b];
                double tps = batch / (stepMs[b] / 1e3);
                if (n == gpus[0]) {
                    single[b] = tps;
                }
                ExchangeTiming x = n == 1 ? null
                        : ExchangeTiming.measure(nccl, n, Math.ceilDiv(batch, n), config.hiddenSize(), 10);
                System.out.printf("%4d %6d %10.2f %10.0f %7.2f %14s %8s %12s %9s%n", n, batch, stepMs[b], tps,
                        tps / single[b], x == null ? "-" : String.format("%.3f", x.gatherScatterMs() * moeLayers),
                        x == null ? "-" : String.format("%.1f", x.gatherScatterGbps()),
                        x == null ? "-" : String.format("%.3f", x.allToAllMs() * moeLayers),
                        x == null ? "-" : String.format("%.1f", x.allToAllGbps()));
            }
        }
    }

    /** Median ms of a greedy decode step of {@code batch} sequences (drawn on the devices). */
    private static double decodeStepMs(Model model, int batch, int steps) {
        List<Session> sessions = new ArrayList<>();
        try {
            List<int[]> prompts = new ArrayList<>();
            TokenDraw[] greedy = new TokenDraw[batch];
            for (int i = 0; i < batch; i++) {
                sessions.add(model.newSession());
                prompts.add(new int[] {1 + i % 1000, 2, 3, 4});
                greedy[i] = TokenDraw.greedy();
            }
            int[] next = model.step(sessions, prompts, greedy).drawn();
            double[] ms = new double[steps];
            for (int it = -2; it < steps; it++) {
                List<int[]> one = new ArrayList<>();
                for (int i = 0; i < batch; i++) {
                    one.add(new int[] {next[i]});
                }
                long a = System.nanoTime();
                StepOutput out = model.step(sessions, one, greedy);
                if (it >= 0) {
                    ms[it] = (System.nanoTime() - a) / 1e6;
                }
                next = out.drawn();
            }
            Arrays.sort(ms);
            return ms[steps / 2];
        } finally {
            sessions.forEach(Session::close);
        }
    }

    private static int[] ints(String csv) {
        return Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
    }
}

package io.moe4j.backend.cuda;

import io.moe4j.backend.cuda.driver.CudaStream;
import io.moe4j.backend.cuda.driver.DeviceBuffer;

/**
 * A grouped GEMV as the tests and CudaGemvBench drive it: {@code out[p, n] = sum_k W[e_p, n, k] * x[r_p, k]} for
 * routed pairs, either the engine's MXFP4 tensor-core GEMV ({@link #tensorCores}) or the CUDA-core one of the test
 * tree ({@link RowGemv}).
 */
interface GroupedGemv extends AutoCloseable {

    /** A stack resident on the device in this GEMV's layout. */
    interface Weights extends AutoCloseable {
        int experts();

        int rows();

        int cols();

        long bytesPerExpert();

        @Override
        void close();
    }

    Weights upload(RowStack host);

    /** Enqueues the pairs {@code firstRoute .. firstRoute + pairs - 1} of {@code routes} (see {@link Routes#pack}). */
    void forward(Weights w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs, DeviceBuffer out,
            CudaStream stream);

    /** Format and tuning, e.g. "MXFP4 mma kauto tauto d4", for benchmark tables. */
    String describe(Weights w);

    /** Registers and spills of the kernel that runs {@code w} for {@code pairs} pairs. */
    String resources(Weights w, int pairs);

    @Override
    void close();

    /** The engine's MXFP4 GEMV; MXFP4 stacks only. */
    static GroupedGemv tensorCores(Mxfp4Gemv gemv) {
        return new TensorCores(gemv);
    }

    record Tiles(Mxfp4Tiles tiles) implements Weights {
        public int experts() {
            return tiles.experts();
        }

        public int rows() {
            return tiles.rows();
        }

        public int cols() {
            return tiles.cols();
        }

        public long bytesPerExpert() {
            return tiles.bytesPerExpert();
        }

        public void close() {
            tiles.close();
        }
    }

    record TensorCores(Mxfp4Gemv gemv) implements GroupedGemv {
        public Weights upload(RowStack host) {
            return new Tiles(gemv.upload(host.mxfp4()));
        }

        public void forward(Weights w, DeviceBuffer x, DeviceBuffer routes, long firstRoute, int pairs,
                DeviceBuffer out, CudaStream stream) {
            gemv.forward(((Tiles) w).tiles(), x, routes, firstRoute, pairs, out, stream);
        }

        public String describe(Weights w) {
            return "MXFP4 " + gemv.tuning().describe();
        }

        public String resources(Weights w, int pairs) {
            return gemv.resources(((Tiles) w).tiles(), pairs);
        }

        public void close() {
            gemv.close();
        }
    }
}

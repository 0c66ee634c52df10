package io.moe4j.backend;

/**
 * The machine as the oracle sees it. Injectable, so tests can pose as an H100, a CPU-only box or a JVM without
 * the Vector API.
 *
 * @param cpuCores          available processors
 * @param vectorApi         whether jdk.incubator.vector is present and usable
 * @param vectorBitSize     the preferred vector species width in bits (0 without the Vector API)
 * @param cpuFeatures       e.g. "avx512f avx2 fma" as far as they can be told
 * @param cuda              the CUDA devices, or an empty description with the reason there are none
 */
public record Platform(int cpuCores, boolean vectorApi, int vectorBitSize, String cpuFeatures, CudaInfo cuda) {

    /**
     * @param available         a usable device with driver and NVRTC
     * @param reason            why not, when not available
     * @param deviceName        e.g. "NVIDIA H100 80GB HBM3"
     * @param computeCapability e.g. 90
     * @param memoryBytes       device memory
     */
    public record CudaInfo(boolean available, String reason, int deviceCount, String deviceName,
                           int computeCapability, long memoryBytes) {
        public static CudaInfo none(String reason) {
            return new CudaInfo(false, reason, 0, "", 0, 0);
        }
    }

    /** A plain CPU machine with the Vector API, for tests and as the fallback description. */
    public static Platform cpuOnly(int cores, int vectorBits) {
        return new Platform(cores, vectorBits > 0, vectorBits, "", CudaInfo.none("no CUDA driver (libcuda.so.1) found"));
    }
}

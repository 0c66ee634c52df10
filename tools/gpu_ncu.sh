#!/usr/bin/env bash
# gpu_ncu.sh KERNEL_REGEX [BATCH=64] [LAYERS=2]: on the GPU machine, Nsight Compute's speed-of-light, warp-state,
# occupancy and launch sections for each launch shape of the kernels matching KERNEL_REGEX (ncu's per-launch-config
# filter: the third launch of each grid) in a DeviceModelBench run of a gpt-oss-20b-shaped checkpoint of LAYERS
# layers with batches of BATCH sequences. The whole report goes to $OUT/ncu.txt (or ./ncu.txt); a summary is printed.
# Extra JVM flags (engine switches) in MOE4J_JAVA_OPTS. Builds from tools/gpu_bundle.sh. ncu locks the clocks to base
# and flushes caches between passes: read its durations against each other, not against the bench's.
# Example: bash tools/gpu_ncu.sh model_linear_bf16_mma 64   (the batch-64 o, q|k|v and lm_head launches)
set -uo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: $0 KERNEL_REGEX [BATCH] [LAYERS]" >&2; exit 2; }
kernel="$1"
batch="${2:-64}"
layers="${3:-2}"
source tools/gpu_java.sh
ncu=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
out="${OUT:-.}/ncu.txt"
dir=$(gpu_java .gpu/classes io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b --layers "$layers" --write-only \
  --cache-dir /tmp/moe4j-ncu 2>/dev/null | tail -1)
"$ncu" --target-processes all -k "regex:$kernel" --filter-mode per-launch-config --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats \
  "${GPU_JAVA[@]}" -cp "$(gpu_cp .gpu/classes)" \
  -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.batches="$batch" io.moe4j.model.cuda.DeviceModelBench "$layers" 8 0 \
  2>&1 | grep -vE "INFO|WARN" > "$out"
grep -E "^  [a-z_0-9]+ \(|Duration|DRAM Throughput|L1/TEX Cache Throughput|L2 Cache Throughput|Registers Per|Achieved Occ|stalled" \
  "$out" | sed 's/  */ /g'

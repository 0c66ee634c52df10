#!/usr/bin/env bash
# gpu_flag_variants.sh ROUNDS LAYERS 'FLAGS A' 'FLAGS B' ...: on the GPU machine, DeviceModelBench (batch-1 greedy and
# the decode step replayed alone, after 16 tokens, and a batch-8 step, or the batch sizes in BATCHES, e.g. BATCHES=8,64) with each set of JVM flags in turn, ROUNDS times
# round-robin in one call, on one gpt-oss-20b-shaped checkpoint of LAYERS layers written first: the A/B of an engine
# switch (e.g. 'none' '-Dmoe4j.cuda.earlyLaunch=all'; the word none stands for no flags). Builds from
# tools/gpu_bundle.sh (.gpu/classes); for two builds use tools/gpu_before_after.sh. Compare only rows of one run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS LAYERS 'FLAGS A' 'FLAGS B' ..." >&2; exit 2; }
rounds="$1"
layers="$2"
shift 2
source tools/gpu_java.sh
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | sed "s/^/# /" || true
dir=$(gpu_java .gpu/classes io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b --layers "$layers" --write-only \
  --cache-dir /tmp/moe4j-flag-variants 2>/dev/null | tail -1)
echo "# checkpoint $dir"
for ((r = 1; r <= rounds; r++)); do
  for flags in "$@"; do
    echo "# round $r: $flags"
    extra="$flags"; [ "$flags" = none ] && extra=""
    # shellcheck disable=SC2086
    gpu_java .gpu/classes $extra -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.batches="${BATCHES:-8}" io.moe4j.model.cuda.DeviceModelBench "$layers" 32 0 \
      2>&1 | grep -E "greedy on the device \(decodeGreedy\)|replayed alone: the whole|decode batch [0-9]+ \(Model.step, greedy|Exception" \
      | sed -E 's/ = [0-9.]+ tokens.s//' || true
  done
done

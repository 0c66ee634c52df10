#!/usr/bin/env bash
# gpu_before_after.sh [ROUNDS=2] [LAYERS=24]: on the GPU machine, the whole-model device benches with the build
# staged as .gpu/old-classes (tools/gpu_stage_old.sh) and the current one (.gpu/classes, tools/gpu_bundle.sh),
# alternated ROUNDS times in one call so that the device's drift falls on both alike: DeviceModelBench (batch-1
# greedy, the step replayed alone, and the batch sizes in BATCHES, default 8) and DeviceDecodeBench (batch-1 greedy
# after long prompts, POSITIONS, default 1024,8000; none skips it), on one gpt-oss-20b-shaped checkpoint of LAYERS
# layers written first.
# Extra JVM flags for both builds in MOE4J_JAVA_OPTS, for the old run only in OLD_JAVA_OPTS: with OLD_JAVA_OPTS and
# no .gpu/old-classes, both runs take the current build and differ only by those flags (a switch's A/B).
# Compare only rows of one run of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds="${1:-2}"
layers="${2:-24}"
positions="${POSITIONS:-1024,8000}"
source tools/gpu_old_build.sh
run() { # classes, then java arguments
  local classes="$1"; shift
  local extra="${MOE4J_JAVA_OPTS:-}"
  [ "$classes" = "$old" ] && [ "${tag:-}" = old ] && extra="$extra ${OLD_JAVA_OPTS:-}"
  # shellcheck disable=SC2086
  /tmp/moe4j-jdk25/bin/java $extra --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
    -Xmx48g -cp ".gpu/test-classes:$classes:$lib" "$@"
}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/# /'
dir=$(run .gpu/classes io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b --layers "$layers" --write-only \
  --cache-dir /tmp/moe4j-before-after 2>/dev/null | tail -1)
echo "# checkpoint $dir; old = $(cat "$old/REVISION" 2>/dev/null || echo "this build") ${OLD_JAVA_OPTS:-}"
for ((r = 1; r <= rounds; r++)); do
  for tag in old new; do
    classes=.gpu/classes; [ "$tag" = old ] && classes="$old"
    echo "# round $r $tag"
    run "$classes" -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.batches="${BATCHES:-8}" io.moe4j.model.cuda.DeviceModelBench \
      "$layers" 32 0 2>&1 \
      | grep -E "greedy on the device \(decodeGreedy\)|replayed alone|decode batch [0-9]+ \(Model.step, greedy|Exception" \
      | sed "s/^/$tag /" || true
    [ "$positions" = none ] || run "$classes" -Dmoe4j.bench.dir="$dir" io.moe4j.model.cuda.DeviceDecodeBench \
      "$positions" 2>&1 | grep -E "decode batch 1, greedy, after|Exception" | sed "s/^/$tag /" || true
  done
done

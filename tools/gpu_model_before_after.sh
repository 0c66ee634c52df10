#!/usr/bin/env bash
# gpu_model_before_after.sh PRESET LAYERS [ROUNDS=2] [bench options...]: on the GPU machine, `moe bench --model-preset
# PRESET --backend cuda --layers LAYERS` (batch-1 decode, a 128-token prompt, BATCHES when set) with the build staged
# as .gpu/old-classes (tools/gpu_stage_old.sh) and the current one (.gpu/classes), alternated ROUNDS times in one
# call; the synthetic checkpoint is written once first. For presets other than gpt-oss-20b, whose DeviceModelBench
# tools/gpu_before_after.sh runs. Extra JVM flags for both in MOE4J_JAVA_OPTS, for the old run only in OLD_JAVA_OPTS
# (without .gpu/old-classes both runs take the current build and differ by those flags).
set -euo pipefail
cd "$(dirname "$0")/.."
preset="$1"
layers="$2"
rounds="${3:-2}"
shift 3 || shift $#
source tools/gpu_old_build.sh
run() { # classes, extra flags, then java arguments
  local classes="$1" extra="$2"; shift 2
  # shellcheck disable=SC2086
  /tmp/moe4j-jdk25/bin/java ${MOE4J_JAVA_OPTS:-} $extra --add-modules jdk.incubator.vector \
    --enable-native-access=ALL-UNNAMED -Xmx48g -cp ".gpu/test-classes:$classes:$lib" io.moe4j.cli.MoeCommand "$@"
}
batches=()
[ -n "${BATCHES:-}" ] && batches=(--batches "$BATCHES")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/# /'
run .gpu/classes "" bench --model-preset "$preset" --layers "$layers" --write-only --cache-dir /tmp/moe4j-model-ab \
  > /dev/null 2>&1
echo "# $preset, $layers layers; old = $(cat "$old/REVISION" 2>/dev/null || echo "this build") ${OLD_JAVA_OPTS:-}"
for ((r = 1; r <= rounds; r++)); do
  for tag in old new; do
    classes=.gpu/classes extra=""
    [ "$tag" = old ] && classes="$old" extra="${OLD_JAVA_OPTS:-}"
    echo "# round $r $tag"
    run "$classes" "$extra" bench --model-preset "$preset" --layers "$layers" --backend cuda \
      --cache-dir /tmp/moe4j-model-ab --decode-tokens 64 "${batches[@]}" "$@" 2>&1 \
      | grep -E "^  (decode|prefill|effective|batch)" || true
  done
done

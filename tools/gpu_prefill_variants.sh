#!/usr/bin/env bash
# gpu_prefill_variants.sh ROUNDS TOKENS 'FLAGS A' 'FLAGS B' ...: on the GPU machine, DevicePrefillBench (a warm prompt
# of TOKENS tokens, three timed passes; with SEQUENCES=N also the prompt as N sequences stepped together, as a server
# admits requests) with each set of JVM flags in turn, ROUNDS times round-robin in one call, on one checkpoint written
# first: gpt-oss-20b shapes of LAYERS layers (default 24), or PRESET=qwen3-30b-a3b etc. The word old in a flag set
# runs the classes tools/gpu_stage_old.sh staged as .gpu/old-classes (e.g. 'old' 'none'); none stands for no flags.
# Prints one line a run (the log's INFO lines dropped). Builds from tools/gpu_bundle.sh. Compare only rows of one run.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS TOKENS 'FLAGS A' 'FLAGS B' ..." >&2; exit 2; }
rounds="$1"
tokens="$2"
shift 2
source tools/gpu_java.sh
dir=$(gpu_java .gpu/classes io.moe4j.cli.MoeCommand bench --model-preset "${PRESET:-gpt-oss-20b}" --layers "${LAYERS:-24}" \
  --write-only --cache-dir /tmp/moe4j-prefill-variants 2>/dev/null | tail -1)
echo "# checkpoint $dir, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null)"
for ((r = 1; r <= rounds; r++)); do
  for flags in "$@"; do
    classes=.gpu/classes
    extra="$flags"
    if [ "${flags%% *}" = old ]; then
      classes=.gpu/old-classes
      extra="${flags#old}"
    fi
    [ "$extra" = none ] && extra=""
    echo -n "round $r, $flags: "
    # shellcheck disable=SC2086
    gpu_java "$classes" $extra -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.phases=false \
      -Dmoe4j.bench.sequences="${SEQUENCES:-1}" io.moe4j.model.cuda.DevicePrefillBench "$tokens" 3 2>&1 \
      | grep -E "^prefill [0-9]+ (tokens after|sequences)|Exception" | grep -v first \
      | sed -E 's/.*= ([0-9]+) tokens\/s/\1/' | tr '\n' ' ' || true
    echo "tokens/s"
  done
done

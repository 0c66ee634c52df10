#!/usr/bin/env bash
# model_bench_before_after.sh OLD.jar NEW.jar [PRESET...]: the whole-model bench (moe bench --model-preset, batch-1
# decode on the cpu backend) with two jars in turn, one JSON line each, so the machine's state falls on both alike.
# Presets default to gpt-oss-20b and qwen3-30b-a3b; MEMORY_GIB (default 40) bounds the model as run, CACHE_DIR
# (default $TMPDIR/moe4j-bench) keeps the synthetic checkpoints between runs. JAVA: a JDK 25 java (default: on PATH).
set -uo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 OLD.jar NEW.jar [PRESET...]" >&2; exit 2; fi
old="$1"; new="$2"; shift 2
presets=("$@"); [ ${#presets[@]} -gt 0 ] || presets=(gpt-oss-20b qwen3-30b-a3b)
java="${JAVA:-java}"
echo "# $(date -u +%FT%TZ) $(uname -n)"
lscpu | grep -E '^(Model name|CPU\(s\))' | sed 's/^/# /'
for p in "${presets[@]}"; do
  for pair in "old:$old" "new:$new"; do
    tag="${pair%%:*}"; jar="${pair#*:}"
    echo "# $p $tag load $(cut -d' ' -f1-3 /proc/loadavg)"
    "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -jar "$jar" \
      bench --model-preset "$p" --backend cpu --memory-gib "${MEMORY_GIB:-40}" \
      --cache-dir "${CACHE_DIR:-${TMPDIR:-/tmp}/moe4j-bench}" --json 2>/dev/null | grep '^{' | sed "s/^/$tag /"
  done
done

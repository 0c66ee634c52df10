#!/usr/bin/env bash
# cpu_before_after.sh OLD.jar NEW.jar [ROUNDS]: the cpu backend's layer bench with two jars, alternated.
#
# Runs `moe bench --json` (gpt-oss-20b MXFP4, fixed routing, 1, 8 and 512 tokens; then 1 token with random routing)
# with OLD and NEW in turn, ROUNDS times (default 3), so that the machine's load falls on both alike; prints the CPU
# model and flags first and one JSON line per run, tagged with the jar. Extra JVM flags go in MOE4J_JAVA_OPTS (e.g.
# -Dmoe4j.cpu.vectorBits=256 or -XX:UseAVX=2, applied to both jars). JAVA points at a JDK 25 java (default: the
# one on PATH). Compare only rows of one run of this script.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: $0 OLD.jar NEW.jar [ROUNDS]" >&2
  exit 2
fi
old="$1"; new="$2"; rounds="${3:-3}"
java="${JAVA:-java}"
for jar in "$old" "$new"; do
  [ -f "$jar" ] || { echo "$0: no jar at $jar" >&2; exit 2; }
done

echo "# $(date -u +%FT%TZ) $(uname -n)"
lscpu | grep -E '^(Model name|CPU\(s\)|Flags)' | sed 's/^/# /'
"$java" -version 2>&1 | head -1 | sed 's/^/# /'

run() { # tag jar args...
  local tag="$1" jar="$2"; shift 2
  # shellcheck disable=SC2086
  "$java" ${MOE4J_JAVA_OPTS:-} --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
    -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -jar "$jar" bench --json --backend cpu "$@" 2>/dev/null | sed "s/^/$tag /"
}

for ((r = 1; r <= rounds; r++)); do
  for pair in "old:$old" "new:$new"; do
    tag="${pair%%:*}"; jar="${pair#*:}"
    echo "# round $r $tag $(cut -d' ' -f1-3 /proc/loadavg)"
    run "$tag" "$jar" --preset gpt-oss-20b --scheme mxfp4 --fixed-routing --tokens 1,8,512
    run "$tag" "$jar" --preset gpt-oss-20b --scheme mxfp4 --tokens 1
  done
done

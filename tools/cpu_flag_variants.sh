#!/usr/bin/env bash
# cpu_flag_variants.sh ROUNDS 'FLAGS A' 'FLAGS B' ...: the cpu backend's layer bench (`moe bench --json --backend
# cpu`, arguments in BENCH_ARGS, default gpt-oss-20b MXFP4, one token, random routing, 200 calls) with each set of
# JVM flags in turn, ROUNDS times round-robin, so that the machine's load falls on all alike: the A/B of an engine
# switch (e.g. 'none' '-Dmoe4j.cpu.tasksPerThread=32'; the word none stands for no flags), of a thread count (flags
# may end in ' -- --threads 8': what follows -- goes to the bench) or of the environment (leading NAME=VALUE words,
# e.g. 'GLIBC_TUNABLES=glibc.malloc.hugetlb=1'). Prints the CPU model and flags first and
# one JSON line a run, tagged with its flags. Runs from the build in target/ (after `mvn test-compile`) or, on the GPU
# machine, from what tools/gpu_bundle.sh staged in .gpu/. Compare only rows of one run of this script.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: $0 ROUNDS 'FLAGS A' 'FLAGS B' ..." >&2; exit 2; }
rounds="$1"
shift
bench_args="${BENCH_ARGS:---preset gpt-oss-20b --scheme mxfp4 --tokens 1 --iterations 200}"
if [ -d .gpu/classes ] && [ ! -d target/classes ]; then
  [ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
  java=/tmp/moe4j-jdk25/bin/java
  cp=".gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')"
else
  export JAVA_HOME="${JAVA_HOME_25:-/usr/lib/jvm/temurin-25-jdk-amd64}"
  export PATH="$JAVA_HOME/bin:$PATH"
  java="$JAVA_HOME/bin/java"
  mvn -q -B -o dependency:build-classpath -Dmdep.outputFile=target/cp.txt >/dev/null
  cp="target/classes:$(cat target/cp.txt)"
fi
echo "# $(date -u +%FT%TZ) $(uname -n)"
lscpu | grep -E '^(Model name|CPU\(s\)|Flags)' | sed 's/^/# /'
for ((r = 1; r <= rounds; r++)); do
  for flags in "$@"; do
    jvm="${flags%% -- *}"; extra=""
    [ "$jvm" != "$flags" ] && extra="${flags#* -- }"
    [ "$jvm" = none ] && jvm=""
    envs=()
    while [[ "$jvm" =~ ^([A-Za-z_][A-Za-z0-9_]*=[^ ]*)\ ?(.*)$ ]]; do
      envs+=("${BASH_REMATCH[1]}"); jvm="${BASH_REMATCH[2]}"
    done
    echo "# round $r: $flags ($(cut -d' ' -f1-3 /proc/loadavg))"
    # shellcheck disable=SC2086
    env "${envs[@]}" "$java" $jvm --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy \
      -cp "$cp" io.moe4j.cli.MoeCommand bench --json --backend cpu $bench_args $extra 2>/dev/null \
      | sed "s|^|$flags: |" || true
  done
done

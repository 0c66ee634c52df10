#!/usr/bin/env bash
# Per-kernel GPU time of one batch-1 greedy decode step of the gpt-oss-20b-shaped model (DeviceModelBench), on the
# GPU machine, from what tools/gpu_bundle.sh staged in .gpu/: ncu times each kernel of the step alone (cold L2, so
# small kernels read slower than inside the step's graph) and the table sums them by kernel and grid.
# Usage: bash tools/gpu_step_profile.sh [layers=24]
set -euo pipefail
cd "$(dirname "$0")/.."
export NCCL_NVLS_ENABLE=0
layers="${1:-24}"
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
java=/tmp/moe4j-jdk25/bin/java
cp=".gpu/test-classes:.gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')"
run() { "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx24g -cp "$cp" "$@"; }
dir=$(run io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b --layers "$layers" --write-only \
  --cache-dir /tmp/moe4j-profile 2>/dev/null | tail -1)
out=$(mktemp)
ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,dram__bytes_read.sum --csv \
  "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx24g -cp "$cp" \
  -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.batches=8 -Dmoe4j.bench.profileBatch=1 \
  io.moe4j.model.cuda.DeviceModelBench "$layers" 4 0 2>/dev/null | sed -n '/^"ID"/,$p' > "$out"
python3 - "$out" <<'PY'
import csv, sys
kernels = {}
for r in csv.DictReader(open(sys.argv[1])):
    m = kernels.setdefault((int(r["ID"]), r["Kernel Name"], r["Grid Size"]), {})
    m[r["Metric Name"]] = float(r["Metric Value"].replace(",", ""))
rows, total = {}, 0.0
for (_, name, grid), m in kernels.items():
    t, b = m.get("gpu__time_duration.sum", 0.0), m.get("dram__bytes_read.sum", 0.0)
    a = rows.setdefault((name, grid), [0, 0.0, 0.0])
    a[0] += 1; a[1] += t; a[2] += b; total += t
print(f"{len(kernels)} kernels, {total / 1e3:.1f} us in all (each timed alone)")
print(f"{'kernel':34} {'grid':14} {'count':>5} {'total us':>9} {'mean us':>8} {'GB/s read':>9}")
for (name, grid), (n, t, b) in sorted(rows.items(), key=lambda kv: -kv[1][1]):
    print(f"{name[:34]:34} {grid:14} {n:5d} {t / 1e3:9.1f} {t / n / 1e3:8.1f} {b / t if t else 0:9.0f}")
PY
rm -f "$out"

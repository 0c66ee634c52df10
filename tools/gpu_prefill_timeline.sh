#!/usr/bin/env bash
# Where a prompt's pass (DevicePrefillBench) spends its time on the GPU machine, from what tools/gpu_bundle.sh staged in
# .gpu/: CUPTI's kernel records (tools/cupti_kernels.c through CUDA_INJECTION64_PATH) of the last timed prompt, by
# kernel and grid (count, summed duration), and the time the device sat idle between kernels (the host's waits:
# router logits read back, host routing, launches).
# Usage: bash tools/gpu_prefill_timeline.sh [tokens=2048] [layers=24]   (extra JVM options in MOE4J_JAVA_OPTS)
set -euo pipefail
cd "$(dirname "$0")/.."
tokens="${1:-2048}"
layers="${2:-24}"
source tools/gpu_timeline_setup.sh
traced ${MOE4J_JAVA_OPTS:-} -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.phases=false \
  io.moe4j.model.cuda.DevicePrefillBench "$tokens" 2 2>&1 | grep -i "prefill\|exception"
python3 - "$work/kernels.txt" <<'PY'
import sys
recs = []
for line in open(sys.argv[1]):
    s, e, g, node, gx, gy, gz, name = line.split(" ", 7)
    recs.append((int(s), int(e), f"{name.strip().split('(')[0][:34]}@{gx}x{gy}x{gz}"))
recs.sort()
first = max(i for i, r in enumerate(recs) if r[2].startswith("model_embed"))
rs = recs[first:]
span = rs[-1][1] - rs[0][0]
idle, end = 0, rs[0][0]
stats = {}
for s, e, key in rs:
    idle += max(0, s - end)
    end = max(end, e)
    a = stats.setdefault(key, [0, 0])
    a[0] += 1
    a[1] += e - s
print(f"last prompt: {len(rs)} kernels over {span/1e6:.2f} ms, device idle between them {idle/1e6:.2f} ms")
print(f"{'kernel@grid':44} {'count':>5} {'mean us':>9} {'total ms':>9}")
for key, (n, d) in sorted(stats.items(), key=lambda kv: -kv[1][1])[:40]:
    print(f"{key:44} {n:5d} {d / n / 1e3:9.1f} {d / 1e6:9.2f}")
PY
rm -rf "$work"

#!/usr/bin/env bash
# Where one greedy decode step of the gpt-oss-20b-shaped model (DeviceModelBench; batch 1, or a batch of BATCH sequences
# stepped together by Model.step) spends its time inside its
# CUDA graph, on the GPU machine, from what tools/gpu_bundle.sh staged in .gpu/: CUPTI's kernel records
# (tools/cupti_kernels.c, loaded into the JVM through CUDA_INJECTION64_PATH) give every node's start and end as the
# graph replays, overlapped launches and all. For the step's median replay the table gives, by kernel and grid, the
# mean duration and what the kernel adds to the step (its end minus the end of the kernel before it), which is the
# share of the step each kind of kernel costs; tools/gpu_step_profile.sh times each kernel alone instead.
# Usage: bash tools/gpu_step_timeline.sh [layers=24] [batch=1]   (extra JVM options in MOE4J_JAVA_OPTS)
set -euo pipefail
cd "$(dirname "$0")/.."
layers="${1:-24}"
batch="${2:-1}"
source tools/gpu_timeline_setup.sh
traced ${MOE4J_JAVA_OPTS:-} -Dmoe4j.bench.dir="$dir" -Dmoe4j.bench.batches="$([ "$batch" = 1 ] && echo 8 || echo "$batch")" \
  io.moe4j.model.cuda.DeviceModelBench "$layers" 8 0 > /dev/null 2>&1
python3 - "$work/kernels.txt" "$batch" <<'PY'
import sys, statistics
batch = int(sys.argv[2])
recs = []
for line in open(sys.argv[1]):
    s, e, g, node, gx, gy, gz, name = line.split(" ", 7)
    recs.append((int(s), int(e), int(g), int(node), f"{name.strip().split('(')[0][:34]}@{gx}x{gy}x{gz}"))
graphs = {}
for r in recs:
    if r[2]:
        graphs.setdefault(r[2], []).append(r)
# the batch-1 step: the graph with one-token linears (model_linear_bf16@640...) and the most replays; a batch's step:
# the most replayed graph without them (the bench runs only that batch size besides batch 1)
def one_token(rs):
    return any(r[4].startswith(("model_linear_bf16@", "model_linear_bf16_staged@")) for r in rs)
cands = [(len(rs), g) for g, rs in graphs.items() if one_token(rs) == (batch == 1)]
if not cands:
    sys.exit("no graph of batch %d found; graphs: %s" % (batch, {g: len(rs) for g, rs in graphs.items()}))
_, gid = max(cands)
rs = sorted(graphs[gid])
nodes = len({r[3] for r in rs})
replays = [rs[i:i + nodes] for i in range(0, len(rs) - nodes + 1, nodes)]
spans = [(r[-1][1] - r[0][0], i) for i, r in enumerate(replays)]
span, at = sorted(spans)[len(spans) // 2]
print(f"graph {gid}: {nodes} kernels, {len(replays)} replays; spans {min(spans)[0]/1e3:.1f}-{max(spans)[0]/1e3:.1f} us,"
      f" median {span/1e3:.1f} us (from the first kernel's start to the last one's end)")
stats, end = {}, None
busy = 0
for s, e, _, _, key in sorted(replays[at]):
    adds = e - end if end is not None else e - s
    end = e if end is None else max(end, e)
    a = stats.setdefault(key, [0, 0, 0])
    a[0] += 1; a[1] += e - s; a[2] += adds
print(f"{'kernel@grid':44} {'count':>5} {'mean us':>8} {'adds us':>8} {'total adds':>10}")
for key, (n, d, a) in sorted(stats.items(), key=lambda kv: -kv[1][2]):
    print(f"{key:44} {n:5d} {d / n / 1e3:8.2f} {a / n / 1e3:8.2f} {a / 1e3:10.1f}")
PY
rm -rf "$work"

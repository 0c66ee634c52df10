#!/usr/bin/env bash
# Where a batch-1 greedy decode step of any model preset spends its time inside its CUDA graph, on the GPU machine,
# from what tools/gpu_bundle.sh staged in .gpu/: `moe bench --model-preset PRESET --backend cuda --layers LAYERS`
# run with CUPTI's kernel recorder (tools/cupti_kernels.c), then, for the most replayed graph (the decode step), the
# mean duration of each kernel and grid and what it adds to the step (its end minus the end of the kernel before it),
# as tools/gpu_step_timeline.sh does for DeviceModelBench's gpt-oss-20b shapes.
# Usage: bash tools/gpu_model_timeline.sh PRESET LAYERS [more bench options]   (extra JVM options in MOE4J_JAVA_OPTS)
set -euo pipefail
cd "$(dirname "$0")/.."
preset="$1"
layers="$2"
shift 2
cuda=/usr/local/cuda
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
cp=".gpu/test-classes:.gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')"
work=$(mktemp -d)
gcc -shared -fPIC -O2 -I"$cuda/include" tools/cupti_kernels.c -L"$cuda/lib64" -lcupti -o "$work/libkernels.so"
# shellcheck disable=SC2086
LD_LIBRARY_PATH="$cuda/lib64:${LD_LIBRARY_PATH:-}" CUDA_INJECTION64_PATH="$work/libkernels.so" \
  MOE4J_KERNELS_OUT="$work/kernels.txt" /tmp/moe4j-jdk25/bin/java ${MOE4J_JAVA_OPTS:-} --add-modules jdk.incubator.vector \
  --enable-native-access=ALL-UNNAMED -Xmx48g -cp "$cp" io.moe4j.cli.MoeCommand bench --model-preset "$preset" \
  --backend cuda --layers "$layers" --cache-dir /tmp/moe4j-timeline "$@"
python3 - "$work/kernels.txt" <<'PY'
import sys
recs = []
for line in open(sys.argv[1]):
    s, e, g, node, gx, gy, gz, name = line.split(" ", 7)
    recs.append((int(s), int(e), int(g), int(node), f"{name.strip().split('(')[0][:34]}@{gx}x{gy}x{gz}"))
graphs = {}
for r in recs:
    if r[2]:
        graphs.setdefault(r[2], []).append(r)
if not graphs:
    sys.exit("no graph replays recorded")
# the decode step: the graph with the most records (replays x kernels)
gid = max(graphs, key=lambda g: len(graphs[g]))
rs = sorted(graphs[gid])
nodes = len({r[3] for r in rs})
replays = [rs[i:i + nodes] for i in range(0, len(rs) - nodes + 1, nodes)]
spans = [(r[-1][1] - r[0][0], i) for i, r in enumerate(replays)]
span, at = sorted(spans)[len(spans) // 2]
print(f"graph {gid}: {nodes} kernels, {len(replays)} replays; spans {min(spans)[0]/1e3:.1f}-{max(spans)[0]/1e3:.1f} us,"
      f" median {span/1e3:.1f} us (from the first kernel's start to the last one's end)")
stats, end = {}, None
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

"""The decode step's kernels as its CUDA graph replays, from tools/cupti_kernels.c's records (one line a kernel:
start end graph node gridX gridY gridZ name): for the median replay of the chosen graph, each kernel and grid's
count, mean duration and what it adds to the step (its end minus the end of the kernel before it).

Usage: python3 graph_timeline.py KERNELS [--batch B]
  --batch B   DeviceModelBench's graphs: B = 1 picks the most replayed graph with one-token bf16 linears, a larger B
              the most replayed one without them (the bench runs only that batch size besides batch 1)
  (none)      the graph with the most records (a CLI bench's batch-1 decode step)
"""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("kernels")
ap.add_argument("--batch", type=int)
args = ap.parse_args()
graphs = {}
for line in open(args.kernels):
    s, e, g, node, gx, gy, gz, name = line.split(" ", 7)
    if int(g):
        graphs.setdefault(int(g), []).append(
            (int(s), int(e), int(g), int(node), f"{name.strip().split('(')[0][:34]}@{gx}x{gy}x{gz}"))
if not graphs:
    raise SystemExit("no graph replays recorded")
if args.batch is None:
    gid = max(graphs, key=lambda g: len(graphs[g]))
else:
    def one_token(rs):
        return any(r[4].startswith(("model_linear_bf16@", "model_linear_bf16_staged@")) for r in rs)
    cands = [(len(rs), g) for g, rs in graphs.items() if one_token(rs) == (args.batch == 1)]
    if not cands:
        raise SystemExit("no graph of batch %d found; graphs: %s" % (args.batch, {g: len(rs) for g, rs in graphs.items()}))
    gid = max(cands)[1]
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
    a[0] += 1
    a[1] += e - s
    a[2] += adds
print(f"{'kernel@grid':44} {'count':>5} {'mean us':>8} {'adds us':>8} {'total adds':>10}")
for key, (n, d, a) in sorted(stats.items(), key=lambda kv: -kv[1][2]):
    print(f"{key:44} {n:5d} {d / n / 1e3:8.2f} {a / n / 1e3:8.2f} {a / 1e3:10.1f}")

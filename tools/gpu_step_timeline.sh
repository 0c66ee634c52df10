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
python3 tools/graph_timeline.py "$work/kernels.txt" --batch "$batch"
rm -rf "$work"

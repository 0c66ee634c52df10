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
python3 tools/graph_timeline.py "$work/kernels.txt"
rm -rf "$work"

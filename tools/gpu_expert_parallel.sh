#!/usr/bin/env bash
# Expert parallelism on a machine with several GPUs, from what tools/gpu_bundle.sh staged in .gpu/: the multi-GPU
# tests, then the whole-model bench on a Qwen3-235B-shaped synthetic model (LAYERS of its 94 layers, written first)
# and the DeepSeek-V3-shaped layer bench, each over 1, 2, 4 ... GPUs at batch 64 and 512.
# Usage: bash tools/gpu_expert_parallel.sh [LAYERS=8] [GPUS=1,2,4] [BATCHES=64,512]
set -uo pipefail
cd "$(dirname "$0")/.."
layers="${1:-8}"; gpus="${2:-1,2,4}"; batches="${3:-64,512}"
export NCCL_NVLS_ENABLE=0   # NVLink multicast stays off on the shared machines
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
java=(/tmp/moe4j-jdk25/bin/java --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx48g
  -cp ".gpu/test-classes:.gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')")
quiet() { grep -v -e "^WARNING" -e "^INFO" -e "^Nov\|^Dec\|^Jan" -e "MoeLayer load" -e "^\s*$"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; nvidia-smi topo -m | head -6
echo "== tests"
timeout 400 bash tools/gpu_tests.sh --select-class io.moe4j.model.ExpertParallelModelsTest \
  --select-class io.moe4j.backend.cuda.nccl.NcclCommTest --select-class io.moe4j.layer.ExpertSlicesAcrossGpusTest \
  2>&1 | quiet | grep -A4 -e "✘" -e "tests successful" -e "tests failed" | head -40
echo "== writing the qwen3-235b-a22b-shaped model, $layers layers"
start=$(date +%s)
dir=$(timeout 400 "${java[@]}" io.moe4j.cli.MoeCommand bench --model-preset qwen3-235b-a22b --layers "$layers" \
  --write-only --cache-dir /tmp/moe4j-models 2>/dev/null | tail -1)
echo "$dir ($(( $(date +%s) - start )) s)"
echo "== whole model, batched greedy decode"
timeout 400 "${java[@]}" io.moe4j.model.cuda.ExpertParallelModelBench "$dir" "$gpus" "$batches" 5 2>&1 | quiet
echo "== deepseek-v3-shaped layer"
timeout 300 "${java[@]}" io.moe4j.layer.ExpertParallelBench "$batches" 10 2>&1 | quiet

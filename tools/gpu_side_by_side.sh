#!/usr/bin/env bash
# moe4j and PyTorch side by side on the GPU machine, on one synthetic gpt-oss-20b checkpoint (MXFP4 experts, bf16
# attention, embeddings and lm_head): moe4j writes it (moe bench --model-preset gpt-oss-20b --write-only), times it
# with the device bench (DeviceModelBench on that directory), writes its logits for a check prompt (moe logits
# --backend cuda); then tools/peers/torch_gpt_oss.py loads the same files (experts dequantized to bf16), checks its
# logits against transformers' and moe4j's, and times transformers' generate and a hand-written torch loop; last,
# the ratios. Measurement tooling, not part of the engine.
#
# Needs .gpu/ from tools/gpu_bundle.sh (jlink JDK, classes, test classes, jars) and python3 with torch,
# transformers and safetensors. Usage:
#   bash tools/gpu_side_by_side.sh [--layers 24] [--steps write,java,logits,torch,ratios] [--dir /tmp/moe4j-sbs]
#        [--decode-tokens 64] [--prefill-tokens 2048] [--batches 1,8,64] [--compile] [--budget 570]
# Results go to DIR/results-NL/ (java.txt, ids and logits.safetensors, torch.jsonl, ratios.txt), the text ones also
# to $OUT when set. The checkpoint and the results stay in --dir for a later call on the same machine (--steps
# write,torch,ratios after --steps write,java,logits, for example, when one call's time limit is too short for all;
# write only checks a checkpoint that is there). --budget: seconds this call may take; steps that would start
# with too little left are skipped, and the torch step is stopped when the budget runs out. SBS_DEVICE=cpu runs the
# logits and torch steps on the host instead (a check of this script on a machine without a GPU, not a bench).
set -uo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
layers=24 steps=write,java,logits,torch,ratios root=/tmp/moe4j-sbs decode=64 prefill=2048 batches=1,8,64
compile="" budget=570 dev="${SBS_DEVICE:-cuda}"
while [ $# -gt 0 ]; do
  case "$1" in
    --layers) layers=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --dir) root=$2; shift 2 ;;
    --decode-tokens) decode=$2; shift 2 ;;
    --prefill-tokens) prefill=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --compile) compile=--compile; shift ;;
    --budget) budget=$2; shift 2 ;;
    *) echo "gpu_side_by_side.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
case "$layers" in ''|*[!0-9]*) echo "gpu_side_by_side.sh: --layers takes a number of layers (1..24)" >&2; exit 2 ;; esac
if [ "$layers" -lt 1 ] || [ "$layers" -gt 24 ]; then
  echo "gpu_side_by_side.sh: --layers must be 1..24 (gpt-oss-20b has 24)" >&2; exit 2
fi
out="$root/results-${layers}L"
mkdir -p "$out"
has() { [[ ",$steps," == *",$1,"* ]]; }
left() { echo $((budget - (SECONDS - start))); }
note() { echo "[$((SECONDS - start)) s] $*"; }
if [ "$layers" -lt 24 ]; then
  note "NOTE: $layers of gpt-oss-20b's 24 layers (--layers): every figure below is of this shrunk model, not the whole one"
fi

java=/tmp/moe4j-jdk25/bin/java
if has write || has java || has logits; then
  [ -d .gpu/classes ] && [ -f .gpu/jdk25.tar.xz ] || { echo "gpu_side_by_side.sh: .gpu/ is missing: run tools/gpu_bundle.sh where Maven is and carry .gpu" >&2; exit 2; }
  [ -x "$java" ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
fi
jars="$(ls .gpu/lib/*.jar 2>/dev/null | tr '\n' ':')"
jflags=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -Xmx16g)
model="$root/gpt-oss-20b-${layers}L-32E"   # the name moe bench --write-only gives it

if has write; then
  note "writing (or reusing) the synthetic checkpoint, $layers layers"
  model="$("$java" "${jflags[@]}" -cp ".gpu/classes:$jars" io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b \
    --layers "$layers" --write-only --cache-dir "$root" 2> >(tail -c 400 >&2))" || { echo "write failed" >&2; exit 1; }
  note "checkpoint: $model ($(du -sh "$model" | cut -f1))"
fi
[ -f "$model/config.json" ] || { echo "gpu_side_by_side.sh: no checkpoint in $model: run --steps write first" >&2; exit 2; }

if has java; then
  if [ "$(left)" -lt 120 ]; then note "skipping java: $(left) s left of --budget"; else
    note "moe4j device bench on $model (decode $decode tokens, prefill $prefill)"
    timeout "$(left)" "$java" "${jflags[@]}" -Dmoe4j.bench.dir="$model" -cp ".gpu/test-classes:.gpu/classes:$jars" \
      io.moe4j.model.cuda.DeviceModelBench "$layers" "$decode" "$prefill" 2>&1 | tee "$out/java.txt"
  fi
fi

if has logits; then
  if [ "$(left)" -lt 90 ]; then note "skipping logits: $(left) s left of --budget"; else
    note "moe4j logits ($dev) of the check prompt"
    python3 tools/peers/torch_gpt_oss.py --model "$model" --write-ids "$out/ids.safetensors" &&
    timeout "$(left)" "$java" "${jflags[@]}" -cp ".gpu/classes:$jars" io.moe4j.cli.MoeCommand logits --backend "$dev" \
      --model "$model" --input "$out/ids.safetensors" --output "$out/logits.safetensors" > "$out/logits-run.txt" 2>&1; tail -3 "$out/logits-run.txt"
  fi
fi

if has torch; then
  if [ "$(left)" -lt 60 ]; then note "skipping torch: $(left) s left of --budget"; else
    java_logits=()
    [ -f "$out/logits.safetensors" ] && java_logits=(--java-logits "$out/logits.safetensors")
    note "PyTorch on the same checkpoint (${java_logits[*]:-no moe4j logits to check against})"
    timeout "$(left)" python3 tools/peers/torch_gpt_oss.py --model "$model" --device "$dev" "${java_logits[@]}" \
      --new-tokens "$decode" --prefill-tokens "$prefill" --batches "$batches" $compile 2>&1 | tee "$out/torch.jsonl"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 3 ] && note "WARNING: a logits check missed its bound (see the check lines): the peers may not compute the same model"
    [ "$rc" = 124 ] && note "torch step stopped at the --budget: figures above are the ones it finished"
  fi
fi

if has ratios; then
  if [ -f "$out/java.txt" ] && [ -f "$out/torch.jsonl" ]; then
    note "ratios"
    python3 tools/peers/side_by_side_ratios.py "$out/java.txt" "$out/torch.jsonl" | tee "$out/ratios.txt"
    [ "$layers" -lt 24 ] && echo "NOTE: $layers of 24 layers (--layers); not the whole gpt-oss-20b" | tee -a "$out/ratios.txt"
  else
    note "no ratios: $out/java.txt or $out/torch.jsonl is missing"
  fi
fi
if [ -n "${OUT:-}" ]; then
  cp "$out"/*.txt "$out"/*.jsonl "$OUT"/ 2>/dev/null
fi
note "done; results in $out${OUT:+ (text files also in \$OUT)}"

#!/usr/bin/env bash
# gpu_serve_load.sh [LAYERS] [CLIENTS] [MAX_TOKENS]: `moe serve` under load on the GPU machine. Writes a synthetic
# gpt-oss-20b-shaped checkpoint of LAYERS layers (default 24; moe bench --model-preset --write-only), puts the real
# gpt-oss tokenizer and chat template beside it, starts `moe serve --backend cuda --max-sequences` (the largest of
# CLIENTS), then runs the test tree's ServeLoad (streaming chat clients: total decode tokens/s and time to first
# token) for each concurrency in CLIENTS (default 1,16,64), 64 requests of MAX_TOKENS (default 32) each, and prints
# the server's /metrics. With PROFILE=1 the server runs under JFR (settings=profile); the recording goes to $OUT.
# Needs .gpu/ from tools/gpu_bundle.sh; carry .gpu/jdk25.tar.xz, .gpu/classes, .gpu/test-classes, .gpu/lib,
# .gpu/serve-lib and .gpu/serve-tokenizer. BACKEND=cpu runs it on the host (a check of the script); GPUS=N serves on N
# GPUs (expert parallelism, `--gpus N`). Measurement tooling, not part of the engine.
set -uo pipefail
cd "$(dirname "$0")/.."
layers="${1:-24}" clients="${2:-1,16,64}" maxTokens="${3:-32}"
most=$(tr ',' '\n' <<<"$clients" | sort -n | tail -1)
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
java=/tmp/moe4j-jdk25/bin/java
cp="$PWD/.gpu/classes:$(ls "$PWD"/.gpu/lib/*.jar "$PWD"/.gpu/serve-lib/*.jar | tr '\n' ':')"
opts=(--add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED)
dir=$("$java" "${opts[@]}" -Xmx${HEAP:-48g} -cp "$cp" io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b \
  --layers "$layers" --write-only --cache-dir /tmp/moe4j-serve-load 2>/dev/null | tail -1)
[ -d "$dir" ] || { echo "gpu_serve_load.sh: no checkpoint written ($dir)" >&2; exit 1; }
cp .gpu/serve-tokenizer/* "$dir"/
echo "# checkpoint $dir, $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | sort | uniq -c | tr -s ' '), --gpus ${GPUS:-1}"
jfr=()
if [ "${PROFILE:-0}" = 1 ]; then
  jfr=("-XX:StartFlightRecording=settings=profile,filename=${OUT:-/tmp}/serve.jfr,dumponexit=true")
fi
port=8765
export NCCL_NVLS_ENABLE=0  # NVLink multicast stays off on the shared machines (bin/moe does the same)
gpus=()
[ -n "${GPUS:-}" ] && gpus=(--gpus "$GPUS")
"$java" "${opts[@]}" -Xmx${HEAP:-48g} "${jfr[@]}" -cp "$cp" io.moe4j.cli.MoeCommand serve --model "$dir" --backend "${BACKEND:-cuda}" \
  --port "$port" --max-sequences "$most" --max-queue 256 "${gpus[@]}" > /tmp/moe4j-serve.log 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT  # the load run failing leaves no server behind
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" > /dev/null && break
  kill -0 "$server" 2>/dev/null || break
  sleep 1
done
if ! curl -sf "http://127.0.0.1:$port/health" > /dev/null; then
  echo "gpu_serve_load.sh: the server did not come up" >&2; tail -20 /tmp/moe4j-serve.log >&2; kill "$server"; exit 1
fi
id=$(basename "$dir")
"$java" -cp ".gpu/test-classes:$cp" io.moe4j.serve.ServeLoad --url "http://127.0.0.1:$port" --model "$id" \
  --clients "$clients" --requests 64 --max-tokens "$maxTokens"
echo "# /metrics"
curl -s "http://127.0.0.1:$port/metrics" | grep -v -e '^#' -e ' 0$' | grep -v -e 'tokens_bucket' -e 'size_bucket' | head -60 | tee /tmp/moe4j-serve.metrics
awk '/^moe4j_time_to_first_token_seconds_sum/ {s=$2} /^moe4j_time_to_first_token_seconds_count/ {c=$2}
  /^moe4j_step_seconds_sum/ {ss=$2} /^moe4j_step_seconds_count/ {sc=$2} /^moe4j_scheduler_host_seconds_total/ {h=$2}
  END {if (c) printf "# time to first token, mean over every request of the run: %.3f s\n", s / c
       if (sc) printf "# model steps %d, %.2f s in all (mean %.2f ms); the scheduler around them %.2f s\n", sc, ss, 1e3 * ss / sc, h}' \
  /tmp/moe4j-serve.metrics
kill -TERM "$server"
wait "$server"
echo "# server log"
grep -v -e " INFO " -e "^INFO" -e "^[A-Z][a-z][a-z] [0-9]" /tmp/moe4j-serve.log | tail -15

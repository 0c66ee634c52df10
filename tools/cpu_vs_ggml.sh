#!/usr/bin/env bash
# cpu_vs_ggml.sh JAR GGML_BUILD_DIR: one MoE layer of moe4j's cpu backend beside ggml's MUL_MAT_ID, one ggml round
# before and one after each pair of moe4j runs (float and int8 activations), so the machine's load falls on both.
#
# GGML_BUILD_DIR holds bin/test-backend-ops from a ggml checkout built with GGML_NATIVE=ON, GGML_BUILD_TESTS=ON
# (ggml's code is not part of this repository). Pairs: gpt-oss MXFP4 vs mxfp4 (32 experts, 4 used, 2880 x 2880),
# qwen3-30b-a3b W4A16 vs q4_0 and W8A16 vs q8_0 (128 experts, 8 used, 768 x 2048), at 1, 8 and 512 tokens with
# fixed routing; then one token with random routing for several schemes. ggml times one matrix of the chosen
# experts (small enough to stay in the last-level cache across its repetitions); moe4j's layer call runs gate, up
# and down, three times those bytes. So each moe4j row has a like-for-like twin (preset ".../iN", --intermediate N):
# gate, up and down shrunk to the bytes and multiply-adds of ggml's one matrix an expert, the same working set.
# JAVA points at a JDK 25 java (default: java on PATH). Compare only rows of one run of this script.
set -uo pipefail
if [ $# -lt 2 ]; then echo "usage: $0 JAR GGML_BUILD_DIR" >&2; exit 2; fi
jar="$1"; gb="$2"; java="${JAVA:-java}"
[ -f "$jar" ] || { echo "$0: no jar at $jar" >&2; exit 2; }
[ -x "$gb/bin/test-backend-ops" ] || { echo "$0: no $gb/bin/test-backend-ops" >&2; exit 2; }
echo "# $(date -u +%FT%TZ) $(uname -n)"
lscpu | grep -E '^(Model name|CPU\(s\)|L3 cache)' | sed 's/^/# /'
lscpu | grep Flags | tr ' ' '\n' | grep -E '^(avx2|avx512f|avx512_vnni|avx512_bf16|avx512_fp16|amx_tile|avx512vbmi)$' | tr '\n' ' ' | sed 's/^/# /'; echo

ggml() { # type shape-filter experts
  "$gb/bin/test-backend-ops" perf -o MUL_MAT_ID -b CPU -p "type_a=$1,type_b=f32,n_mats=$3" 2>&1 \
    | sed 's/\x1b\[[0-9;]*m//g' | grep -E "MUL_MAT_ID\(type_a=$1" | grep -v fusion | grep -E "$2" \
    | grep -E 'n=(1|8|512),' | sed -E 's/^ +/ggml /; s/ +[0-9]+ runs - +/ /'
}
moe() {
  "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -XX:+UseParallelGC -XX:-UseAdaptiveSizePolicy -jar "$jar" \
    bench --json --backend cpu "$@" 2>/dev/null | grep '^{' | sed 's/^/moe4j /'
}
echo "# load $(cut -d' ' -f1-3 /proc/loadavg)"
ggml mxfp4 'm=2880,.*k=2880' 32
moe --preset gpt-oss-20b --scheme mxfp4 --fixed-routing --tokens 1,8,512
moe --preset gpt-oss-20b --scheme mxfp4 --fixed-routing --tokens 1,8,512 --activations int8
moe --preset gpt-oss-20b --scheme mxfp4 --fixed-routing --tokens 1,8,512 --intermediate 960
moe --preset gpt-oss-20b --scheme mxfp4 --fixed-routing --tokens 1,8,512 --intermediate 960 --activations int8
ggml mxfp4 'm=2880,.*k=2880' 32
for pair in "q4_0 w4a16" "q8_0 w8a16"; do
  set -- $pair
  ggml "$1" 'm=768' 128
  moe --preset qwen3-30b-a3b --scheme "$2" --fixed-routing --tokens 1,8,512
  moe --preset qwen3-30b-a3b --scheme "$2" --fixed-routing --tokens 1,8,512 --activations int8
  moe --preset qwen3-30b-a3b --scheme "$2" --fixed-routing --tokens 1,8,512 --intermediate 256
  moe --preset qwen3-30b-a3b --scheme "$2" --fixed-routing --tokens 1,8,512 --intermediate 256 --activations int8
  ggml "$1" 'm=768' 128
done
echo "# one token, random routing"
moe --preset gpt-oss-20b --scheme mxfp4 --tokens 1
moe --preset gpt-oss-20b --scheme mxfp4 --tokens 1 --activations int8
for s in nvfp4 fp8-block w4a16 mxfp6-e3m2; do moe --preset qwen3-30b-a3b --scheme "$s" --tokens 1; done

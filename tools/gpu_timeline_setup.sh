# Sourced by tools/gpu_step_timeline.sh and tools/gpu_prefill_timeline.sh on the GPU machine (after
# tools/gpu_bundle.sh staged .gpu/): the JDK, the class path, CUPTI's kernel recorder (tools/cupti_kernels.c) built
# against the machine's CUPTI, and the gpt-oss-20b-shaped checkpoint of $layers layers. Defines
#   run ARGS...      java with the bundle's class path
#   traced ARGS...   the same with every kernel recorded into $work/kernels.txt
# and sets $dir (the checkpoint) and $work (a scratch folder the caller removes).
cuda=/usr/local/cuda
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
java=/tmp/moe4j-jdk25/bin/java
cp=".gpu/test-classes:.gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')"
work=$(mktemp -d)
gcc -shared -fPIC -O2 -I"$cuda/include" tools/cupti_kernels.c -L"$cuda/lib64" -lcupti -o "$work/libkernels.so"
run() { "$java" --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx24g -cp "$cp" "$@"; }
traced() {
  LD_LIBRARY_PATH="$cuda/lib64:${LD_LIBRARY_PATH:-}" CUDA_INJECTION64_PATH="$work/libkernels.so" \
    MOE4J_KERNELS_OUT="$work/kernels.txt" run "$@"
}
dir=$(run io.moe4j.cli.MoeCommand bench --model-preset gpt-oss-20b --layers "$layers" --write-only \
  --cache-dir /tmp/moe4j-profile 2>/dev/null | tail -1)

# Sourced by the GPU machine's bench scripts (gpu_flag_variants.sh, gpu_prefill_variants.sh, gpu_ncu.sh) from the
# repository root, after tools/gpu_bundle.sh staged .gpu/: unpacks the jlink JDK once and defines
#   GPU_JAVA            the java command with the engine's flags (MOE4J_JAVA_OPTS first), as an array
#   gpu_cp CLASSES      the class path: the bundle's test classes, CLASSES (.gpu/classes or .gpu/old-classes), jars
#   gpu_java CLASSES …  "${GPU_JAVA[@]}" -cp "$(gpu_cp CLASSES)" …
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
# shellcheck disable=SC2206
GPU_JAVA=(/tmp/moe4j-jdk25/bin/java ${MOE4J_JAVA_OPTS:-} --add-modules jdk.incubator.vector
  --enable-native-access=ALL-UNNAMED -Xmx48g)
gpu_cp() { echo ".gpu/test-classes:$1:$(ls .gpu/lib/*.jar | tr '\n' ':')"; }
gpu_java() {
  local classes="$1"; shift
  "${GPU_JAVA[@]}" -cp "$(gpu_cp "$classes")" "$@"
}

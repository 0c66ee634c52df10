#!/usr/bin/env bash
# Runs JUnit selectors (default: the cuda package, the conformance suites and the whole-model device tests) from what
# tools/gpu_bundle.sh staged in .gpu/, on a machine with an NVIDIA GPU and no Java. Extra JVM flags (engine switches)
# in MOE4J_JAVA_OPTS.
set -uo pipefail
cd "$(dirname "$0")/.."
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
java=/tmp/moe4j-jdk25/bin/java
selectors=("$@")
[ ${#selectors[@]} -gt 0 ] || selectors=(--select-package io.moe4j.backend.cuda --select-package io.moe4j.conformance
  --select-class io.moe4j.backend.oracle.PlatformProbeTest --select-class io.moe4j.model.ConformanceModelsTest
  --select-class io.moe4j.model.DeviceModelTest --select-class io.moe4j.model.DeviceBatchTest
  --select-package io.moe4j.model.cuda)
# shellcheck disable=SC2086
"$java" ${MOE4J_JAVA_OPTS:-} --add-modules jdk.incubator.vector --enable-native-access=ALL-UNNAMED -Xmx16g \
  -Dmoe4j.shared="$PWD/.gpu/shared" -Dmoe4j.conformance="$PWD/src/test/resources/conformance" \
  -jar .gpu/junit-platform-console-standalone-1.11.4.jar execute \
  --class-path ".gpu/test-classes:.gpu/classes:$(ls .gpu/lib/*.jar | tr '\n' ':')" \
  --disable-banner --details=summary --details-theme=ascii "${selectors[@]}"

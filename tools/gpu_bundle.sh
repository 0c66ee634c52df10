#!/usr/bin/env bash
# Stages what the GPU test suites need on a machine with no Java and no Maven into .gpu/ (git-ignored): a jlink
# image of JDK 25 (tar.xz), the compiled classes and test classes, the test classpath's jars, the JUnit console
# launcher and the whole-model fixtures of ../shared (on the GPU machine: `bash tools/gpu_tests.sh [JUnit
# selectors...]`), and the server's jars and a tokenizer for tools/gpu_serve_load.sh.
# `tools/gpu_bundle.sh --classes` (after a first full run) only recompiles offline and refreshes the classes and test
# classes: the quick step between two device calls of an A/B.
set -euo pipefail
cd "$(dirname "$0")/.."
export JAVA_HOME="${JAVA_HOME_25:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export PATH="$JAVA_HOME/bin:$PATH"
# The compiled code only; test-classes' copy of the conformance fixtures stays out (src/test/resources travels, and
# with it the carried tree would pass the device's 64 MiB).
stage_classes() {
  rm -rf .gpu/classes .gpu/test-classes
  cp -r target/classes .gpu/classes
  cp -r target/test-classes .gpu/test-classes
  rm -rf .gpu/test-classes/conformance
}
if [ "${1:-}" = --classes ]; then
  [ -d .gpu/lib ] || { echo "no .gpu/lib: run tools/gpu_bundle.sh once without --classes" >&2; exit 2; }
  mvn -q -B -o -DskipTests test-compile
  stage_classes
  du -sh .gpu
  exit 0
fi
mkdir -p .gpu/lib
if [ ! -f .gpu/jdk25.tar.xz ]; then
  rm -rf /tmp/moe4j-jdk25
  jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.unsupported,jdk.incubator.vector,java.net.http,java.naming,java.sql,jdk.crypto.ec,java.xml,jdk.jfr \
    --strip-debug --no-header-files --no-man-pages --output /tmp/moe4j-jdk25 2>/dev/null
  tar -C /tmp -cJf .gpu/jdk25.tar.xz moe4j-jdk25
fi
mvn -q -B -DskipTests test-compile dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile=.gpu/cp.txt
rm -f .gpu/lib/*.jar
# Left out to keep the bundle under the device's 64 MiB: JMH (benches) and the HTTP server and client of the serve tests; JUnit comes with the console launcher.
tr ':' '\n' < .gpu/cp.txt | grep -v -e jmh -e commons-math3 -e /junit- -e opentest4j -e apiguardian -e openai -e kotlin -e okhttp -e okio -e jetty -e javalin -e jackson-module -e jackson-datatype -e swagger | xargs -I{} cp {} .gpu/lib/
# The server's jars apart, in .gpu/serve-lib, with the real gpt-oss tokenizer and chat template in
# .gpu/serve-tokenizer: tools/gpu_serve_load.sh carries them instead of .gpu/shared.
rm -rf .gpu/serve-lib .gpu/serve-tokenizer && mkdir -p .gpu/serve-lib .gpu/serve-tokenizer
tr ':' '\n' < .gpu/cp.txt | grep -e jetty -e javalin -e jackson-module -e jackson-datatype -e kotlin \
  | xargs -I{} cp {} .gpu/serve-lib/
cp ../shared/tokenizers/gpt-oss/* .gpu/serve-tokenizer/
mvn -q -B dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.11.4 -DoutputDirectory=.gpu
stage_classes
rm -rf .gpu/shared
mkdir -p .gpu/shared && cp -r ../shared/conformance-models .gpu/shared/
du -sh .gpu

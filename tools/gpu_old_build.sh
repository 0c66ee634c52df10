# Sourced by the GPU machine's before/after scripts (gpu_before_after.sh, gpu_model_before_after.sh) from the
# repository root: sets $old to the classes of the build to compare against (.gpu/old-classes from
# tools/gpu_stage_old.sh, or, with OLD_JAVA_OPTS and no staged build, the current .gpu/classes: a switch's A/B),
# $lib to the bundle's jars as a class path, and unpacks the jlink JDK once.
old=.gpu/old-classes
if [ ! -d "$old" ]; then
  [ -n "${OLD_JAVA_OPTS:-}" ] || { echo "$0: no .gpu/old-classes (tools/gpu_stage_old.sh REV) and no OLD_JAVA_OPTS" >&2; exit 2; }
  old=.gpu/classes
fi
[ -d /tmp/moe4j-jdk25 ] || tar -C /tmp -xJf .gpu/jdk25.tar.xz
lib="$(ls .gpu/lib/*.jar | tr '\n' ':')"

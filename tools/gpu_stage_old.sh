#!/usr/bin/env bash
# gpu_stage_old.sh REV: compiles the engine at git revision REV (a temporary worktree) and stages its classes as
# .gpu/old-classes, beside the current build that tools/gpu_bundle.sh stages as .gpu/classes, so that one device call
# can time both builds alternated (tools/gpu_before_after.sh). Carry .gpu/old-classes with the bundle's paths.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 1 ] || { echo "usage: $0 REV" >&2; exit 2; }
export JAVA_HOME="${JAVA_HOME_25:-/usr/lib/jvm/temurin-25-jdk-amd64}"
export PATH="$JAVA_HOME/bin:$PATH"
rev="$(git rev-parse --short "$1")"
tree="$(mktemp -d)/moe4j-$rev"
git worktree add --detach -q "$tree" "$rev"
trap 'git worktree remove --force "$tree"' EXIT
(cd "$tree" && mvn -q -B -o -DskipTests compile)
rm -rf .gpu/old-classes
mkdir -p .gpu
cp -r "$tree/target/classes" .gpu/old-classes
echo "$rev" > .gpu/old-classes/REVISION
echo "staged $rev as .gpu/old-classes ($(du -sh .gpu/old-classes | cut -f1))"

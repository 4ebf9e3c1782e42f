#!/usr/bin/env bash
# Builds one library per kernel variant for an A/B in one device call (scripts/device-check.sh's
# SOLOPS_VARIANTS), incrementally in the release build: for each NAME=REF, REF's own changes to
# the sources (since its merge base with HEAD; REF a branch or commit) are applied to the working
# tree, the library rebuilt and stripped into build/variants/NAME/libsolops.so.0, and the tree put
# back; the release build ends as HEAD's. The variants are packed into build/variants.tar.xz, one
# file to carry.
# Usage: scripts/build-variants.sh NAME=REF [NAME=REF ...]   (a clean working tree under src/)
# Then, on the device: (cd build && tar xJf variants.tar.xz) &&
#   SOLOPS_VARIANTS="NAME=build/variants/NAME/libsolops.so.0 ..." scripts/device-check.sh FAMILY
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || { echo "usage: $0 NAME=REF [NAME=REF ...]" >&2; exit 2; }
git diff --quiet HEAD -- src include || { echo "src/ or include/ has uncommitted changes" >&2; exit 1; }
preset=${SOLOPS_PRESET:-release}
library=build/$preset/libsolops.so.0.1.0
restore() { git checkout -q HEAD -- src include && git clean -fq -- src include; }  # also files a variant added
trap restore EXIT
rm -rf build/variants
for variant in "$@"; do
  name=${variant%%=*} ref=${variant#*=}
  echo "=== $name: $(git log -1 --format='%h %s' "$ref")"
  git diff "$(git merge-base HEAD "$ref")" "$ref" -- src include | git apply --allow-empty
  cmake --build --preset "$preset" -j "$(nproc)"
  mkdir -p "build/variants/$name"
  strip -o "build/variants/$name/libsolops.so.0" "$library"
  restore
done
cmake --build --preset "$preset" -j "$(nproc)"
tar -C build -cJf build/variants.tar.xz variants
ls -l build/variants.tar.xz

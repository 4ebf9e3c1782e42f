# shellcheck shell=bash disable=SC2154 # $build is the caller's
# Sourced (from the repo root) by scripts/device-check.sh and scripts/ncu-stalls.sh on the GPU
# machine, which reaches no package index:
# - the C++ build carried from the CPU machine ($build, set by the caller: its test binaries and the
#   library file) gets its library's links made again, and LD_LIBRARY_PATH points at it;
# - the wheels of .whl/ (scripts/fetch-wheels.sh: the benchmark's optional alternatives, and the
#   package's build requirements) go into /tmp/site;
# - the solops package is installed: a wheel built on the CPU machine (build/wheel/, `pip wheel .
#   -w build/wheel`) where one was carried, else from source with README.md's command, pip reading
#   .whl/ for what the build needs.
for library in "$build"/libsolops.so.*.*.*; do
  [ -e "$library" ] || continue
  soname=${library%.*.*}
  [ -e "$soname" ] || ln -s "$(basename "$library")" "$soname"
  [ -e "$build/libsolops.so" ] || ln -s "$(basename "$soname")" "$build/libsolops.so"
done
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SOLOPS_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
fi
if ls build/wheel/solops-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-deps --force-reinstall build/wheel/solops-*.whl
else
  PIP_NO_INDEX=1 PIP_FIND_LINKS="$PWD/.whl" python3 -m pip install -q ".[test]"
fi

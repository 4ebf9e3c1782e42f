# shellcheck shell=bash disable=SC2154 # $build is the caller's
# Sourced (from the repo root) by scripts/device-check.sh and scripts/ncu-stalls.sh on the GPU
# machine: the build carried from the CPU machine ($build, set by the caller) gets its library's
# links made again (a call carries the library file alone), LD_LIBRARY_PATH and PYTHONPATH point at
# it and at python/, and the wheels of .whl/ (scripts/fetch-wheels.sh) go into /tmp/site.
for library in "$build"/libsolops.so.*.*.*; do
  [ -e "$library" ] || continue
  soname=${library%.*.*}
  [ -e "$soname" ] || ln -s "$(basename "$library")" "$soname"
  [ -e "$build/libsolops.so" ] || ln -s "$(basename "$soname")" "$build/libsolops.so"
done
export LD_LIBRARY_PATH="$PWD/$build${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export SOLOPS_SOURCE_DIR=$PWD PYTHONUNBUFFERED=1
export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH="$PYTHONPATH:/tmp/site"
fi

#!/usr/bin/env bash
# Downloads the benchmark's optional alternatives as CPython 3.12 wheels into .whl/ (git-ignored), for
# a GPU machine that cannot reach a package registry: scripts/device-check.sh installs whatever .whl/
# holds into its own site directory. FlagGems (pooling) with the two packages it imports that the
# H200 image lacks, and Liger (row norms) with `packaging`, which Liger imports; and what
# `pip install .` builds the package with (scikit-build-core and its requirements, and CMake and
# Ninja: the GPU machine's own come from pip packages of its Python environment, which pip's isolated
# build does not see), for scripts/device-env.sh to install it there as README.md says. FlashInfer is
# left out: its wheel (about 100 MB) exceeds what one device call carries.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .whl
python3 -m pip download --quiet --no-deps --dest .whl --python-version 3.12 --only-binary=:all: \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform any \
  flag_gems==5.0.2 sqlalchemy==2.0.48 greenlet==3.5.6 liger-kernel==0.8.5 packaging scikit-build-core pathspec 'cmake>=3.25' ninja
ls .whl

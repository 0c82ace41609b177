#!/usr/bin/env bash
# The fixer's checks that need a GPU, for a machine with one (an H200 with
# CUDA 13.0's driver, python 3.12, numpy, numba-cuda, cuda-bindings, cupy) and
# no package registry. Before: scripts/fetch_wheels.sh and
# `python bench/bench_fixer.py prepare` on a machine with a registry and nvcc;
# carry wheels/ and bench/out/fixer/ along. Then, on the GPU machine:
#
#     OUT=/some/folder scripts/gpu_check.sh
#
# It installs the project from wheels/ into a virtual environment that sees
# the system's packages, records the versions and nvidia-smi, runs the
# `gpu`-marked tests and the validation benchmark (bench/bench_fixer.py run:
# every TL302 kernel of the acceptance set and of the fixtures, original vs
# fixed, above L2, cuBLAS through CuPy as the ceiling), and writes everything
# under $OUT: versions.txt, nvidia-smi.txt, pytest_gpu.txt, fixer_bench.json,
# fixer_bench.md and the bar chart fixer_bench.png. Exit status: the
# benchmark's (0 all bit-identical, 1 a difference or a failure, 3 no GPU).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-bench/out/gpu}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
VENV=${VENV:-.gpu-venv}
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv --system-site-packages "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --no-index --find-links wheels tolk-lint lark libcst z3-solver click \
    pathspec pytest hypothesis > "$OUT/install.txt" 2>&1 || { echo "install from wheels/ failed" >&2; cat "$OUT/install.txt" >&2; exit 2; }
"$VENV/bin/python" -m pip list > "$OUT/versions.txt" 2>&1
(nvidia-smi || echo "no nvidia-smi") > "$OUT/nvidia-smi.txt" 2>&1
"$VENV/bin/python" -m pytest -q -p no:cacheprovider -m gpu tests/test_fixer_ptx.py > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu tests: $(tail -1 "$OUT/pytest_gpu.txt")"
if [ ! -f bench/out/fixer/prepared.json ] && command -v nvcc > /dev/null; then
    "$VENV/bin/python" bench/bench_fixer.py prepare --out bench/out/fixer > "$OUT/prepare.txt" 2>&1
fi
"$VENV/bin/python" bench/bench_fixer.py run --pairs bench/out/fixer --out "$OUT"
status=$?
cat "$OUT/fixer_bench.md" 2>/dev/null
exit $status

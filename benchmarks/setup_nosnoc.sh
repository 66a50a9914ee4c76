#!/usr/bin/env bash
# Create the virtual environment that benchmarks/mpcc_vs_nosnoc.py runs nosnoc in.
#
#   bash benchmarks/setup_nosnoc.sh [VENV_DIR]
#
# VENV_DIR defaults to the folder of $CONTACTMP_NOSNOC_PYTHON (its bin/python), else
# ${XDG_CACHE_HOME:-~/.cache}/contactmp/nosnoc. nosnoc 0.2.0 pins its own casadi and numpy, which differ from the ones
# contactmp uses, so it lives in its own environment and the benchmark calls it in a subprocess
# (benchmarks/nosnoc_side.py). Re-running the script is harmless: it reuses the environment and
# pip leaves the pinned version in place.
set -euo pipefail

NOSNOC_VERSION="0.2.0"
if [[ $# -ge 1 ]]; then
    VENV="$1"
elif [[ -n "${CONTACTMP_NOSNOC_PYTHON:-}" ]]; then
    VENV="$(dirname "$(dirname "$CONTACTMP_NOSNOC_PYTHON")")"
else
    VENV="${XDG_CACHE_HOME:-$HOME/.cache}/contactmp/nosnoc"
fi
PY="${PYTHON:-python3}"

if [[ ! -x "$VENV/bin/python" ]]; then
    echo "creating $VENV with $($PY --version 2>&1)"
    mkdir -p "$(dirname "$VENV")"
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "nosnoc==${NOSNOC_VERSION}"
"$VENV/bin/python" - <<'EOF'
import importlib.metadata as md
import casadi, numpy, nosnoc  # noqa: F401
print(f"nosnoc {md.version('nosnoc')}, casadi {casadi.__version__}, numpy {numpy.__version__}")
EOF
echo "interpreter: $VENV/bin/python  (export CONTACTMP_NOSNOC_PYTHON=$VENV/bin/python if it is not the default)"

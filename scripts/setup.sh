#!/usr/bin/env bash
# Create .venv (if missing) and install dpadapt with its test extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch is pinned to the CPU build (2.13.0); install it first so nothing pulls a CUDA build.
python -m pip install -q "torch==2.13.0"
python -m pip install -q -e ".[test]"

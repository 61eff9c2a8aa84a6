#!/usr/bin/env bash
# Create .venv (if missing) and install dpadapt with its test extras. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
. .venv/bin/activate
python -m pip install -q --upgrade pip
# torch is pinned (2.13.0) and installed first. PyPI's Linux wheel pulls NVIDIA's CUDA libraries;
# TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu installs the CPU-only wheel from PyTorch's index.
if [ -n "${TORCH_INDEX_URL:-}" ]; then
  python -m pip install -q "torch==2.13.0" --index-url "$TORCH_INDEX_URL" --extra-index-url https://pypi.org/simple
else
  python -m pip install -q "torch==2.13.0"
fi
python -m pip install -q -e ".[test]"

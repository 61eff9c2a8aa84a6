#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the whole test suite on 2 workers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python -m pytest -n 2 -q -rfE "$@"   # -q ends with the summary line; the exit status is pytest's

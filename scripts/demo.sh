#!/usr/bin/env bash
# Set up (scripts/setup.sh) and run the two-party demo on generated data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
dpadapt demo "$@"

#!/usr/bin/env bash
# Set up (scripts/setup.sh), build the documentation site (warnings are errors) and run the whole test
# suite on 2 workers (the examples gallery included: tests/test_examples.py).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
python -m pip install -q -e ".[test,docs]"
site=$(mktemp -d)
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "$site"   # fails on any warning
rm -rf "$site"
# Bytecode for the package, as a regular install has it: under PYTHONDONTWRITEBYTECODE every subprocess the suite
# starts would otherwise recompile dpadapt from source (and the help-page start-up test would time compilation).
python -m compileall -q src/dpadapt > /dev/null
python -m pytest -n 2 -q -rfE "$@"   # -q ends with the summary line; the exit status is pytest's

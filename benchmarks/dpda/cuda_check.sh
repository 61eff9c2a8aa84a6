#!/usr/bin/env bash
# The deep methods' CUDA check (issue 40), one step on a machine with a GPU.
#
# Runs, with device="auto" (= CUDA when torch sees it): the CUDA tests (tests/test_deep_cuda.py: DPDA,
# G-DPDA, DP-SWD with device="cuda"), the deep test files, and the quick cells of the deep suites
# (dpda-timing = seconds per epoch of DANN / DPDA ghost / DPDA vmap / G-DPDA, dpda, dpswd-digits), then
# the same dpda-timing cells on the CPU for the epoch-time comparison. Everything goes under
# ${OUT:-benchmarks/dpda/results/cuda-check}: nvidia-smi, torch's view of the device, pytest logs,
# the suites' JSON/CSV rows. Usage (repository root, package installed or PYTHONPATH=src):
#     OUT=/some/dir bash benchmarks/dpda/cuda_check.sh
# Budget: about 10 minutes on one GPU; a step that fails is logged and the script goes on.
set -u
OUT=${OUT:-benchmarks/dpda/results/cuda-check}
mkdir -p "$OUT"
export PYTHONPATH=${PYTHONPATH:-$PWD/src}
(nvidia-smi || true) > "$OUT/nvidia-smi.txt" 2>&1
python - > "$OUT/torch-device.txt" 2>&1 <<'PY'
import torch
print("torch", torch.__version__, "cuda available:", torch.cuda.is_available())
if torch.cuda.is_available():
    print("device:", torch.cuda.get_device_name(0), "capability:", torch.cuda.get_device_capability(0))
PY
cat "$OUT/torch-device.txt"
step() {  # step NAME SECONDS CMD...: run with a time limit, log its output and wall time
  local name=$1 limit=$2; shift 2
  local t0=$(date +%s)
  timeout "$limit" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "$name rc=$rc wall_s=$(( $(date +%s) - t0 ))" | tee -a "$OUT/steps.txt"
}
step pytest-cuda 180 python -m pytest tests/test_deep_cuda.py -q -rs -p no:randomly -n 0
step pytest-deep 240 python -m pytest tests/test_dpda.py tests/test_deep_holes.py tests/test_deep_runtime.py \
    tests/test_deep_mechanisms.py tests/test_dpswd.py -q -p no:randomly -n 0
step timing-cuda 240 dpadapt bench dpda-timing --quick --seeds 1 --no-progress --out "$OUT/dpda-timing-cuda.json"
step dpda-quick-cuda 240 dpadapt bench dpda --quick --seeds 1 --no-progress --out "$OUT/dpda-quick-cuda.json"
step dpswd-digits-quick-cuda 300 dpadapt bench dpswd-digits --quick --seeds 1 --no-progress --out "$OUT/dpswd-digits-quick-cuda.json"
step timing-cpu 300 env CUDA_VISIBLE_DEVICES= dpadapt bench dpda-timing --quick --seeds 1 --no-progress --out "$OUT/dpda-timing-cpu.json"
cat "$OUT/steps.txt"

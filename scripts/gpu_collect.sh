#!/usr/bin/env bash
# Collect measured CUDA records on a GPU machine in one command, within 10 minutes.
#
#   OUT=/path/to/out scripts/gpu_collect.sh [extra gpu_collect.py arguments]
#
# Needs a Python with apache-tvm 0.27, apache-tvm-ffi 0.1.14.post1 and this package (pip install -e .), nvcc on
# PATH and a CUDA GPU. Writes $OUT/tuning_logs/<target>/ (TVM JSON databases, MANIFEST.json, noise.json,
# summary.json). A hard timeout of 570 s stops everything; the collection itself stops cleanly at --budget-s.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-gpu_out}"
PY="${PYTHON:-python}"
export OUT

"$PY" - <<'EOF'
import importlib, shutil, sys
missing = [m for m in ("tvm", "tvm_ffi", "tvm_cost", "xgboost", "cloudpickle", "psutil") if importlib.util.find_spec(m) is None]
if missing:
    sys.exit(f"gpu_collect: missing Python packages: {', '.join(missing)} (pip install -e .)")
if shutil.which("nvcc") is None:
    sys.exit("gpu_collect: nvcc is not on PATH")
EOF
nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv,noheader || echo "gpu_collect: nvidia-smi failed" >&2
mkdir -p "$OUT"
# The worker processes die with the collector (PR_SET_PDEATHSIG), so the timeout leaves nothing behind.
timeout --signal=TERM --kill-after=20 570 "$PY" scripts/gpu_collect.py --out "$OUT" --no-progress "$@" \
    2>&1 | tee "$OUT/gpu_collect.log"

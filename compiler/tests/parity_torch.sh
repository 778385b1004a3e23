#!/bin/sh
# parity_torch.sh TYC_ORACLE - runs parity_torch.py (libtyc against PyTorch) under the system
# Python; exits 77 (skipped) when torch, numpy or pytest is missing.
set -eu
/usr/bin/python3 -c 'import torch, numpy, pytest' 2>/dev/null || { echo "torch/numpy/pytest missing: skipped"; exit 77; }
export TYC_ORACLE="$1"
cd "$(dirname "$0")"
exec env PYTHONDONTWRITEBYTECODE=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \
    /usr/bin/python3 -m pytest -q -p no:cacheprovider parity_torch.py

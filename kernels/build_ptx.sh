#!/usr/bin/env bash
# Builds kernels/ptx/neuromorphic_gemv.ptx from kernels/neuromorphic_gemv.cu with nvcc (run it on
# a machine with the CUDA toolkit) and stamps it with the SHA-256 of the source and the flags.
# A CPU test (gpu-reservoir, tests/ptx_stamp.rs) recomputes the stamp and fails if the source or
# flags changed without a rebuild.
set -euo pipefail
cd "$(dirname "$0")"
FLAGS="-ptx -arch=compute_75 -fmad=false -lineinfo"
stamp=$( (cat neuromorphic_gemv.cu; printf '%s' "$FLAGS") | sha256sum | cut -d' ' -f1)
mkdir -p ptx
nvcc $FLAGS -o ptx/neuromorphic_gemv.ptx.tmp neuromorphic_gemv.cu
{ echo "// source-stamp: sha256 of neuromorphic_gemv.cu + flags \"$FLAGS\" = $stamp"
  echo "// built by kernels/build_ptx.sh with $(nvcc --version | tail -1)"
  cat ptx/neuromorphic_gemv.ptx.tmp; } > ptx/neuromorphic_gemv.ptx
rm ptx/neuromorphic_gemv.ptx.tmp
echo "wrote kernels/ptx/neuromorphic_gemv.ptx ($stamp)"

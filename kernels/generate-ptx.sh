#!/usr/bin/env bash
# Makes kernels/ptx/*.ptx from kernels/*.cu with NVRTC 12.1, whose PTX (ISA 8.1) every driver
# of CUDA 12.1 or later (Linux 530.30.02 or later) takes. Run it after changing a .cu or .cuh
# file; a CPU test (`cargo test -p reservoir-kernels`) fails until the PTX is made again.
#
#   kernels/generate-ptx.sh            fetches NVRTC 12.1.105 from PyPI into a cache folder
#   NVRTC_LIB=DIR kernels/generate-ptx.sh   uses the libnvrtc.so.12 in DIR
#
# No GPU is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${NVRTC_LIB:-}" ]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/reservoir/nvrtc-12.1.105
  if [ ! -f "$cache/nvidia/cuda_nvrtc/lib/libnvrtc.so.12" ]; then
    rm -rf "$cache.tmp" && mkdir -p "$cache.tmp"
    python3 -m pip download -q --no-deps --only-binary=:all: --platform manylinux1_x86_64 \
      -d "$cache.tmp" nvidia-cuda-nvrtc-cu12==12.1.105
    python3 -m zipfile -e "$cache.tmp"/nvidia_cuda_nvrtc_cu12-12.1.105-*.whl "$cache.tmp/x"
    rm -rf "$cache" && mv "$cache.tmp/x" "$cache" && rm -rf "$cache.tmp"
  fi
  NVRTC_LIB=$cache/nvidia/cuda_nvrtc/lib
fi
LD_LIBRARY_PATH=$NVRTC_LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  cargo run -q --release -p kernel-ptx -- kernels/ptx

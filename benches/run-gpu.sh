#!/usr/bin/env bash
# Runs the GPU benchmarks from a folder of prebuilt binaries and writes the JSON lines of their
# figures (the format: benches/report.py) to one file: gpu_bench, gpu_lif_bench,
# gpu_sweep_bench, gpu_startup_bench (twice: an empty kernel cache, then the same cache warm),
# fit_1m.sh (the GPU and the CPU fit) and, where PyTorch with CUDA is importable, pytorch_esn.py,
# each at its default size. Each program's seconds are printed after it.
#
#   cargo build --release -p reservoir-benches --bins -p reservoir-cli
#   bash benches/run-gpu.sh [--spread] [BIN_DIR] [OUT]
#   python3 benches/report.py OUT          # merge into benches/results.jsonl, write the page
#
# BIN_DIR: the binaries (default target/release). OUT: the JSON lines (default $RESULTS, else
# target/gpu-results.jsonl); every program's whole output goes to OUT.log. --spread adds
# gpu_spread_bench (needs two GPUs or more and libnccl.so on the library path; minutes more).
# Exits 1 if a program failed (the others still run) or if no figure came out.
set -uo pipefail

spread=0
positional=()
for arg in "$@"; do
  case "$arg" in
    --spread) spread=1 ;;
    -*) echo "run-gpu: unknown option $arg" >&2; exit 2 ;;
    *) positional+=("$arg") ;;
  esac
done
bin=$(realpath -m "${positional[0]:-target/release}")
out=$(realpath -m "${positional[1]:-${RESULTS:-target/gpu-results.jsonl}}")
cd "$(dirname "$0")/.."

for program in gpu_bench gpu_lif_bench gpu_sweep_bench gpu_startup_bench reservoir; do
  [ -x "$bin/$program" ] || { echo "run-gpu: no executable $bin/$program" >&2; exit 2; }
done
if [ "$spread" = 1 ] && [ ! -x "$bin/gpu_spread_bench" ]; then
  echo "run-gpu: no executable $bin/gpu_spread_bench" >&2
  exit 2
fi
mkdir -p "$(dirname "$out")"
cache=$(mktemp -d)
trap 'rm -rf "$cache"' EXIT
: > "$out"
: > "$out.log"
failed=()

# `bench NAME COMMAND...` runs COMMAND, its output appended to the log and its JSON lines to
# OUT, and prints its exit status and seconds.
bench() {
  local name=$1 started=$SECONDS
  shift
  echo "== $name: $*" | tee -a "$out.log"
  "$@" 2>&1 | tee -a "$out.log" | grep '^{' >> "$out"
  local status=${PIPESTATUS[0]}
  echo "== $name: exit $status after $((SECONDS - started)) s" | tee -a "$out.log"
  [ "$status" = 0 ] || failed+=("$name")
}

bench gpu_bench "$bin/gpu_bench"
bench gpu_lif_bench "$bin/gpu_lif_bench"
bench gpu_sweep_bench "$bin/gpu_sweep_bench"
RESERVOIR_KERNEL_CACHE=$cache bench "gpu_startup_bench (empty kernel cache)" "$bin/gpu_startup_bench"
RESERVOIR_KERNEL_CACHE=$cache bench "gpu_startup_bench (warm kernel cache)" "$bin/gpu_startup_bench"
bench fit_1m bash benches/fit_1m.sh "$bin"
if python3 -c 'import sys, torch; sys.exit(not torch.cuda.is_available())' 2>/dev/null; then
  bench pytorch_esn python3 benches/pytorch_esn.py
else
  echo "== pytorch_esn: skipped, no PyTorch with CUDA here" | tee -a "$out.log"
fi
[ "$spread" = 1 ] && bench gpu_spread_bench "$bin/gpu_spread_bench" all --repeats 3

figures=$(wc -l < "$out")
echo "$figures figures in $out; the whole output in $out.log"
if [ "${#failed[@]}" -gt 0 ]; then
  printf 'run-gpu: failed: %s\n' "${failed[@]}" >&2
  exit 1
fi
[ "$figures" -gt 0 ] || { echo "run-gpu: no figure came out (is there a GPU?)" >&2; exit 1; }

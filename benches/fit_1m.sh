#!/usr/bin/env bash
# End to end: `reservoir fit` on a 1,000,000-step canonical NARMA-10 series with N = 1000, on
# the GPU (--device cuda: states and XᵀX stay on the device) and on the CPU, wall time of the
# whole process (start, CSV read, weights and spectral radius, run, ridge, 10,000 test rows).
#
#   bash benches/fit_1m.sh [BIN_DIR] [--skip-cpu]
#
# BIN_DIR holds the `reservoir` binary (default target/release). Needs python3.
# Run from the repository root. The CPU run takes minutes on a 2-core machine; --skip-cpu omits it.
# Prints a table and the JSON lines of its figures (benches/python/records.py).
set -euo pipefail
bin=${1:-target/release}
[ "${bin#--}" = "$bin" ] || bin=target/release
skip_cpu=0
for arg in "$@"; do [ "$arg" = "--skip-cpu" ] && skip_cpu=1; done
reservoir="$bin/reservoir"
[ -x "$reservoir" ] || { echo "fit_1m: no executable $reservoir" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Canonical NARMA-10 diverges on most seeds over a million steps (the generator refuses such a
# series); seed 184 is the first of 1..200 whose 1,010,000 steps stay bounded.
t0=$(date +%s.%N)
"$reservoir" generate narma10 --length 1010000 --seed 184 --split 1000000 \
  --output "$work/train.csv" --test-output "$work/test.csv"
t1=$(date +%s.%N)
echo "generated 1,000,000 training and 10,000 test rows in $(python3 -c "print(f'{$t1 - $t0:.2f}')") s"

backends=(cuda); [ "$skip_cpu" = 1 ] || backends+=(cpu)
for backend in "${backends[@]}"; do
  start=$(date +%s.%N)
  "$reservoir" fit --config "$here/fit_1m.toml" --device "$backend" --train "$work/train.csv" \
    --test "$work/test.csv" --inputs u --targets y --json > "$work/$backend.json"
  end=$(date +%s.%N)
  python3 -c "print($end - $start)" > "$work/$backend.wall"
done

# The command recorded with the figures: BIN_DIR as `cargo build --release` leaves it.
command="bash benches/fit_1m.sh"; [ "$skip_cpu" = 1 ] && command+=" --skip-cpu"
python3 - "$here/python" "$command" "$work" "${backends[@]}" <<'PY'
import json, sys
sys.path.insert(0, sys.argv[1])
from records import Recorder, gpu_model
command, work, backends = sys.argv[2], sys.argv[3], sys.argv[4:]
rows = []
for b in backends:
    report = json.load(open(f"{work}/{b}.json"))
    wall = float(open(f"{work}/{b}.wall").read())
    if report["backend"] != b:
        sys.exit(f"fit_1m: asked for backend {b}, the fit ran on {report['backend']}")
    rows.append((b, wall, report))
print()
print("| backend | process wall s | fit_seconds (weights, run, ridge) | training steps/s | train NRMSE | test NRMSE |")
print("|---|---|---|---|---|---|")
for b, wall, r in rows:
    print(f"| {b} | {wall:.2f} | {r['fit_seconds']:.2f} | {r['n_train'] / r['fit_seconds']:,.0f} "
          f"| {r['train_nrmse']:.4f} | {r['test_nrmse']:.4f} |")
recorder = Recorder("fit_1m", gpu=gpu_model(), command=command)
for b, wall, r in rows:
    case = {"N": 1000, "connection": 0.1, "rows": r["n_train"], "device": b}
    recorder.figure(case, "process wall", wall, "s")
    recorder.figure(case, "fit, weights to readout", r["fit_seconds"], "s")
    recorder.figure(case, "test NRMSE", r["test_nrmse"], "")
if len(rows) == 2:
    (_, gw, g), (_, cw, c) = rows
    print(f"\ncuda vs cpu: process {cw / gw:.1f}x, fit {c['fit_seconds'] / g['fit_seconds']:.1f}x; "
          f"test NRMSE {g['test_nrmse']:.4f} vs {c['test_nrmse']:.4f}")
    if abs(g["test_nrmse"] - c["test_nrmse"]) > 1e-3 * c["test_nrmse"]:
        sys.exit("fit_1m: FAILED: the GPU and CPU fits disagree by more than 1e-3 relative")
PY

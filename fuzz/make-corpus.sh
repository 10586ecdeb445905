#!/usr/bin/env bash
# Writes the seed corpus of the fuzz targets (fuzz/corpus/<target>/) from scratch: CSV files
# from `reservoir generate` and by hand, the configs of configs/, small models of each kind
# saved by `reservoir fit` and `reservoir run`, and NumPy files written by numpy. Files named
# `valid-*` must be accepted by a reader (the replay test checks it); the others are
# malformed on purpose. Needs python3 with numpy; builds the CLI in release mode.
#
#   fuzz/make-corpus.sh
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -q -p reservoir-cli
reservoir="${CARGO_TARGET_DIR:-target}/release/reservoir"
corpus=fuzz/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{csv,config,model,npy}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- CSV: wide files from the task generators, long-form sequence files, malformed files.
"$reservoir" generate narma10 --length 40 --seed 3 --output "$corpus/csv/valid-narma10.csv"
"$reservoir" generate mackey-glass --length 30 --output "$corpus/csv/valid-mackey-glass.csv"
"$reservoir" generate lorenz --length 20 --output "$corpus/csv/valid-lorenz.csv"
# seq, t, u, y, label: the fuzz check reads it as sequence, time, input, targets, label.
cat > "$corpus/csv/valid-long.csv" <<'EOF'
seq,t,u,y,label
b,2,0.5,1.5,cat
a,1,-0.25,2,dog
b,0,1e-3,-3.5,cat
a,0,7,4.5,dog
c,-1,3.25,5,7
b,1,-0,6.5,cat
EOF
printf 'id,u,v\r\n1,5,6\r\n2,6,7\r\n1,7,8\r\n"2", 8 ,"9"\r\n' > "$corpus/csv/valid-ids-crlf.csv"
printf '\xef\xbb\xbfnote,u,y\n"free, text",1.5,2.5\n"a ""quoted"" word",-3e38,4.9e-324\n' \
  > "$corpus/csv/valid-bom-quoted.csv"
printf 'seq,t,u,y,label\na,1,1,2,x\na,1.0,1,2,x\n' > "$corpus/csv/same-time.csv"
printf 'seq,t,u,y,label\na,0,1,2,x\na,1,1,2,y\n' > "$corpus/csv/two-labels.csv"
printf 'u,y\n1,2\n3\n' > "$corpus/csv/ragged.csv"
printf 'u,y\n1,NaN\ninf,2\n' > "$corpus/csv/non-finite.csv"
printf 'u,u\n1,2\n' > "$corpus/csv/repeated-header.csv"
printf 'u,y\n' > "$corpus/csv/header-only.csv"
printf 'u,"y\n1,2\n' > "$corpus/csv/open-quote.csv"
printf 'u,y\n\xff\xfe,1\n' > "$corpus/csv/not-utf8.csv"
: > "$corpus/csv/empty.csv"

# --- Configs: every config of configs/ (valid) and a few broken ones.
for config in configs/*.toml; do
  cp -L "$config" "$corpus/config/valid-$(basename "$config")"
done
printf '[reservoir]\nsize = 50\nbackend = "cpu"\n' > "$corpus/config/valid-legacy-backend.toml"
printf 'device = "cuda:1"\n[reservoir]\nsize = 20\n[sweep]\nleak_rate = [0.1, 1.0]\nfolds = 3\n' \
  > "$corpus/config/valid-sweep-folds.toml"
printf 'device = "cpu"\n[reservoir]\nbackend = "cuda"\n' > "$corpus/config/device-disagrees.toml"
printf '[reservoir]\nspectral_raduis = 0.9\n' > "$corpus/config/unknown-key.toml"
printf '[reservoir]\nsize = "big"\n' > "$corpus/config/wrong-type.toml"
printf '[reservoir]\nleak_rate = 0\n' > "$corpus/config/rule-broken.toml"
printf '[task]\nkind = "narma10"\ntrain = 10\ntest = 5\nseed = 1\n[readout]\nwashout = 10\n' \
  > "$corpus/config/washout-too-long.toml"
printf '[reservoir\nsize = 1\n' > "$corpus/config/bad-syntax.toml"
printf '[reservoir]\nsize = 1\n\xc3\x28\n' > "$corpus/config/not-utf8.toml"

# --- Models: one of each kind, saved by the command line, and the version 1 fixtures.
cat > "$work/series.toml" <<'EOF'
[reservoir]
size = 12
connection_prob = 0.5
seed = 3
[readout]
ridge = 1e-4
washout = 5
EOF
"$reservoir" generate narma10 --length 60 --output "$work/narma.csv"
"$reservoir" fit --config "$work/series.toml" --train "$work/narma.csv" --inputs u --targets y \
  --device cpu --model "$corpus/model/valid-series.bin" > /dev/null
sed 's/seed = 3/seed = 4\nprecision = "f64"\nactivation = "identity"/' "$work/series.toml" \
  > "$work/series64.toml"
"$reservoir" generate lorenz --length 60 --output "$work/lorenz.csv"
"$reservoir" fit --config "$work/series64.toml" --train "$work/lorenz.csv" --inputs x,y,z \
  --targets x_next,z_next --device cpu --model "$corpus/model/valid-series-f64.bin" > /dev/null
printf '[reservoir]\nsize = 10\nconnection_prob = 0.5\nseed = 5\n[readout]\nridge = 1e-3\n[features]\nsummaries = ["last", "mean_last"]\nlast_k = 2\n' \
  > "$work/classifier.toml"
"$reservoir" fit --config "$work/classifier.toml" --train "$corpus/csv/valid-long.csv" \
  --inputs u --label-column label --sequence-column seq --time-column t --device cpu \
  --model "$corpus/model/valid-sequence-classifier.bin" > /dev/null
cat > "$work/spike.toml" <<'EOF'
[task]
kind = "spike_classification"
classes = 3
channels = 4
pattern_ms = 10.0
onset_ms = 2.0
sample_ms = 16.0
train_per_class = 3
test_per_class = 2
dt_ms = 2.0
segments = 2
seed = 1
[task.encoder]
kind = "rate"
steps = 1
[reservoir]
size = 10
connection_prob = 0.5
seed = 2
[readout]
ridge = 1e-3
EOF
"$reservoir" run "$work/spike.toml" --device cpu --model "$corpus/model/valid-spike.bin" > /dev/null
cp crates/reservoir-runtime/tests/fixtures/series-v1.bin "$corpus/model/valid-series-v1.bin"
cp crates/reservoir-runtime/tests/fixtures/spike-v1.bin "$corpus/model/valid-spike-v1.bin"
head -c 100 "$corpus/model/valid-series.bin" > "$corpus/model/truncated.bin"
printf 'RSVMODEL\x03\x00\x00\x00' > "$corpus/model/future-version.bin"
printf 'not a model at all' > "$corpus/model/foreign.bin"

# --- NumPy: arrays and archives written by numpy.
python3 - "$corpus/npy" <<'EOF'
import sys
import numpy as np

out = sys.argv[1]
rng = np.random.default_rng(7)
np.save(f"{out}/valid-2d-f64.npy", rng.standard_normal((6, 2)))
np.save(f"{out}/valid-3d-f32.npy", rng.standard_normal((3, 4, 2)).astype(np.float32))
np.save(f"{out}/valid-fortran.npy", np.asfortranarray(rng.standard_normal((5, 3))))
np.save(f"{out}/valid-big-endian.npy", rng.standard_normal((4, 2)).astype(">f8"))
x = rng.standard_normal((3, 5, 2))
x[0, 4, 1] = np.nan  # padding past the length may hold anything
np.savez(f"{out}/valid-ragged.npz", x=x, y=rng.standard_normal((3, 5, 1)).astype(np.float32),
         label=np.array([7, -2, 7]), len=np.array([4, 2, 5], dtype=np.int32))
np.savez_compressed(f"{out}/valid-compressed.npz", x=rng.standard_normal((6, 2)),
                    y=rng.standard_normal((6, 1)), label=np.array([3], dtype=np.uint8),
                    len=np.array([6], dtype=np.uint16))
np.save(f"{out}/ints.npy", np.arange(6, dtype=np.int64).reshape(3, 2))
np.save(f"{out}/one-d.npy", np.arange(4.0))
np.save(f"{out}/empty-rows.npy", np.zeros((0, 3)))
np.save(f"{out}/non-finite.npy", np.array([[1.0, np.inf]]))
np.savez(f"{out}/lengths-out-of-range.npz", x=np.zeros((2, 3, 1)), len=np.array([4, 0]))
np.savez(f"{out}/label-floats.npz", x=np.zeros((2, 3, 1)), label=np.array([1.0, 2.0]))
EOF
head -c 90 "$corpus/npy/valid-2d-f64.npy" > "$corpus/npy/truncated.npy"

du -sh "$corpus"
ls -l "$corpus"/*

#!/usr/bin/env bash
# sanitize.sh: gpu-reservoir's test executables under compute-sanitizer's memcheck, racecheck,
# synccheck and initcheck, with a summary per tool and executable.
#
# `.ci/gpu --sanitize` runs it after the GPU suite. The executables are the ones `.ci/gpu
# stage` builds (where the Rust toolchain is; the GPU machine needs none), unpacked in
# .gpu/bin by `.ci/gpu run`; on the GPU machine, from the workspace root:
#   crates/gpu-reservoir/sanitize.sh [-t TOOLS] [-j JOBS] [-T SECONDS] [-s DIR] [-o DIR] [-a]
#                                    [-b] [NAME[:FILTER] ...]
# NAME: a staged executable (gpu-reservoir-test-gpu, the crate's integration tests;
# gpu-reservoir-lib-gpu_reservoir, its unit tests); FILTER: libtest's test-name filter (a
# module of the tests, e.g. device_faults). Default: the small cases, which run every kernel:
# the modules kernels_compile, small_kernels_parity and device_faults of the integration tests.
# -a: every staged executable of the crate instead (the large parity tests take long under
# racecheck).
# -t: tools, comma-separated (default: all four); -j: runs at once (default 4); -T: seconds per
# run before it is killed (default 900); -s: the staged executables (default .gpu/bin);
# -o: one log per run (default sanitize-logs); -b: racecheck with a synchronisation after
# every launch (--force-synchronization-limit 1), for the long runs of cuBLAS GEMMs (batched,
# features, gram, sweep parity): while they are queued, racecheck's host memory grows by
# ~0.85 GB/s (H100, compute-sanitizer 2025.3.1) until the kernel's OOM killer ends the test with
# SIGKILL, which compute-sanitizer reports as "process didn't terminate successfully" with 0
# hazards and exit status 9; with -b it stayed at 1.5 GB over the 41 s measured. Leave the
# kernels unfiltered: racecheck with --kernel-name limited to this crate's kernels failed with
# "Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception" in the f16
# batched step.
# Each run: RESERVOIR_REQUIRE_GPU=1 (a missing GPU fails), RESERVOIR_SANITIZE=1 (the tests'
# time limits x30, smaller cases in device_faults; the out-of-memory test skips itself),
# --include-ignored --test-threads=1, --error-exitcode 86. Verdicts: clean (no finding, every
# test passed), FINDINGS (the tool reported errors or hazards), FAILED (a test failed),
# TIMEOUT, ABNORMAL (anything else: see the log). Exit status: the runs that were not clean.
set -u
tools=memcheck,racecheck,synccheck,initcheck jobs=4 limit=900 stage=.gpu/bin logs=sanitize-logs
all=0 bounded=0
while getopts t:j:T:s:o:ab opt; do
  case $opt in
    t) tools=$OPTARG ;; j) jobs=$OPTARG ;; T) limit=$OPTARG ;; s) stage=$OPTARG ;;
    o) logs=$OPTARG ;; a) all=1 ;; b) bounded=1 ;; *) sed -n '2,31p' "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
targets=("$@")
if [ ${#targets[@]} -eq 0 ] && [ $all = 1 ]; then
  for exe in "$stage"/gpu-reservoir-*; do targets+=("${exe##*/}"); done
elif [ ${#targets[@]} -eq 0 ]; then
  tests=gpu-reservoir-test-gpu
  targets=("$tests:kernels_compile" "$tests:small_kernels_parity" "$tests:device_faults")
fi
mkdir -p "$logs"
declare -A extra=([racecheck]="--racecheck-report all")
[ $bounded = 0 ] || extra[racecheck]+=" --force-synchronization-limit 1"
run() { # tool, executable, filter, log
  local start=$SECONDS
  RESERVOIR_REQUIRE_GPU=1 RESERVOIR_SANITIZE=1 timeout -k 10 "$limit" \
    compute-sanitizer --tool "$1" ${extra[$1]:-} --error-exitcode 86 --print-limit 1000 \
    --require-cuda-init=no \
    "$stage/$2" --include-ignored --test-threads=1 ${3:+"$3"} >"$4" 2>&1
  printf '\nsanitize.sh: exit status %s after %s s\n' "$?" "$((SECONDS - start))" >>"$4"
}
runs=()
for tool in ${tools//,/ }; do
  for target in "${targets[@]}"; do
    name=${target%%:*} filter=; [[ $target == *:* ]] && filter=${target#*:}
    log="$logs/$tool.$name${filter:+.$filter}.log"
    runs+=("$tool $name $log")
    while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
    run "$tool" "$name" "$filter" "$log" &
  done
done
wait
printf '%-9s %-32s %-9s %6s  %s\n' tool executable verdict secs 'sanitizer summary | tests'
bad=0
for entry in "${runs[@]}"; do
  read -r tool name log <<<"$entry"
  status=$(sed -n 's/^sanitize.sh: exit status \([0-9]*\) after \([0-9]*\) s$/\1 \2/p' "$log")
  read -r rc secs <<<"${status:-? ?}"
  summary=$(grep -aoE '(ERROR|RACECHECK) SUMMARY: .*' "$log" | tail -1)
  tests=$(grep -aoE 'test result: [a-zA-Z]+\. [0-9]+ passed; [0-9]+ failed' "$log" |
    awk '{p += $4; f += $6} END {if (NR) printf "%d passed, %d failed", p, f}')
  case $rc in
    0) verdict=clean ;; 86) verdict=FINDINGS ;; 124 | 137) verdict=TIMEOUT ;;
    101) verdict=FAILED ;; *) verdict="ABNORMAL" ;;
  esac
  [ "$verdict" = clean ] || bad=$((bad + 1))
  label=${log#"$logs/$tool."}
  printf '%-9s %-32s %-9s %6s  %s | %s (exit %s)\n' "$tool" "${label%.log}" \
    "$verdict" "$secs" "${summary:-no summary}" "${tests:-no test result}" "$rc"
done
echo "runs not clean: $bad of ${#runs[@]} (logs in $logs/)"
exit "$bad"

#!/usr/bin/env bash
# The Cuda suite under compute-sanitizer, one process per test case, spread
# over the GPUs: every case of the chosen features under every chosen tool,
# the slow ones first, N processes per GPU at a time (tests/README.md,
# compute-sanitizer, says why one process per case).
#
#   bash tests/compute-sanitizer.sh [options] BUILD_DIR
#
# BUILD_DIR is a Cuda build holding tests/kdforge_tests_<feature> for each
# feature (`ninja -C BUILD_DIR kdforge_tests_<feature>`).
#
# Options (defaults in brackets):
#   --features "F ..."  [every feature whose binary BUILD_DIR holds]
#   --tools "T ..."     [memcheck racecheck initcheck synccheck]
#   --cases REGEX       [every case] only the cases whose names match REGEX
#                       (grep -E, e.g. 'million identical|every allocation')
#   --per-gpu N         [8] processes per GPU at a time
#   --gpus G            [the number nvidia-smi lists] G GPUs, 0 .. G-1, or
#                       a list of device numbers: "2,3" (jobs go to the
#                       listed GPUs in turn, slow ones first; "0,1,0"
#                       gives GPU 0 twice the processes of GPU 1)
#   --out DIR           [compute-sanitizer-out] one log per job and summary.tsv
#   --resume            keep DIR's finished jobs (rc 0) and run only the rest
#   --dry-run           list the jobs in the order they would start, run none
#
# Each job is `compute-sanitizer --tool T --error-exitcode 9 --print-limit 20
# BINARY --test-case=<case>`; racecheck leaves out Kokkos's ParallelReduce and
# ParallelScan kernels (tests/README.md says why). The cases are a feature's
# list less its Serial, OpenMP and Threads instances (they launch no kernel)
# and the memory feature's case that fills the GPU on purpose (run it alone:
# tests/README.md). summary.tsv has a line per finished job: tool, feature,
# exit status, seconds, log file, the sanitizer's and doctest's summaries,
# case. The script prints the counts per tool and feature, names every job
# that did not exit 0, and exits 1 if any did.
set -euo pipefail

features="" tools="memcheck racecheck initcheck synccheck" cases_re="" per_gpu=8 gpus="" out=compute-sanitizer-out
resume=0 dry=0 build=""
while [ $# -gt 0 ]; do
  case "$1" in
    --features) features=$2; shift 2 ;;
    --tools) tools=$2; shift 2 ;;
    --cases) cases_re=$2; shift 2 ;;
    --per-gpu) per_gpu=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --resume) resume=1; shift ;;
    --dry-run) dry=1; shift ;;
    -h|--help) awk 'NR > 1 && /^set -euo/ {exit} NR > 1' "$0"; exit 0 ;;
    -*) echo "compute-sanitizer.sh: unknown option $1 (--help lists them)" >&2; exit 2 ;;
    *) build=$1; shift ;;
  esac
done
[ -n "$build" ] || { echo "compute-sanitizer.sh: give the Cuda build folder (--help)" >&2; exit 2; }
[ -d "$build/tests" ] || { echo "compute-sanitizer.sh: $build/tests does not exist" >&2; exit 2; }
case "$per_gpu" in ''|*[!0-9]*|0) echo "compute-sanitizer.sh: --per-gpu takes a positive number" >&2; exit 2 ;; esac
for t in $tools; do
  case "$t" in memcheck|racecheck|initcheck|synccheck) ;;
    *) echo "compute-sanitizer.sh: unknown tool '$t' (memcheck racecheck initcheck synccheck)" >&2; exit 2 ;;
  esac
done
if [ -z "$features" ]; then
  for b in "$build"/tests/kdforge_tests_*; do [ -x "$b" ] && features="$features ${b##*/kdforge_tests_}"; done
fi
[ -n "${features// /}" ] || { echo "compute-sanitizer.sh: no tests/kdforge_tests_<feature> in $build (ninja -C $build kdforge_tests_<feature>)" >&2; exit 2; }
for f in $features; do
  [ -x "$build/tests/kdforge_tests_$f" ] || { echo "compute-sanitizer.sh: $build/tests/kdforge_tests_$f is not built (ninja -C $build kdforge_tests_$f)" >&2; exit 2; }
done
if [ $dry = 0 ]; then
  command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer.sh: compute-sanitizer is not on PATH (it comes with the CUDA toolkit)" >&2; exit 2; }
  if [ -z "$gpus" ]; then gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true); fi
  if [[ "$gpus" =~ ^[1-9][0-9]*$ ]]; then
    gpu_ids=($(seq 0 $((gpus - 1))))
  elif [[ "$gpus" =~ ^[0-9]+(,[0-9]+)+$ ]]; then
    IFS=, read -r -a gpu_ids <<< "$gpus"
  else
    echo "compute-sanitizer.sh: no GPU found (nvidia-smi -L), or --gpus '$gpus' is neither a number nor a list like 2,3" >&2
    exit 2
  fi
fi

mkdir -p "$out"
summary=$out/summary.tsv
[ $resume = 1 ] && [ -f "$summary" ] && awk -F'\t' '$3 == 0' "$summary" > "$summary.keep" || : > "$summary.keep"
mv "$summary.keep" "$summary"

# Cases measured at 15 minutes or more under some tool on an H100
# (tests/README.md): started first, so that they are not the last to end.
slow='identical tree|other dimensions|recursive reference|every distribution|million identical|every allocation of every builder|D from 1 to 1000|GEMM and by tiles'
rank_tool() { case $1 in racecheck) echo 1 ;; initcheck) echo 2 ;; memcheck) echo 3 ;; *) echo 4 ;; esac; }
jobs=$out/jobs.tsv
: > "$jobs.unsorted"
for f in $features; do
  cases=$("$build/tests/kdforge_tests_$f" --list-test-cases \
            --test-case-exclude='*<Kokkos::Serial>*,*<Kokkos::OpenMP>*,*<Kokkos::Threads>*,on the GPU? memory the device cannot give*' |
          awk '/listing all test case names/{on=1; next} on && /^=+$/{n++; if (n==2) exit; next} on && n==1')
  while IFS= read -r c; do
    [ -n "$c" ] || continue
    if [ -n "$cases_re" ] && ! printf '%s\n' "$c" | grep -Eq -- "$cases_re"; then continue; fi
    for t in $tools; do
      if awk -F'\t' -v t="$t" -v f="$f" -v c="$c" '$1 == t && $2 == f && $7 == c {found=1} END{exit !found}' "$summary"; then continue; fi
      p=$(rank_tool "$t")
      if printf '%s\n' "$c" | grep -Eq "$slow"; then p=0$p; else p=1$p; fi
      printf '%s\t%s\t%s\t%s\n' "$p" "$t" "$f" "$c" >> "$jobs.unsorted"
    done
  done <<< "$cases"
done
sort -s -t$'\t' -k1,1 "$jobs.unsorted" | cut -f2- > "$jobs"
rm -f "$jobs.unsorted"
total=$(wc -l < "$jobs")
if [ "$total" = 0 ]; then
  echo "compute-sanitizer.sh: no job to run (no case matches --cases, or --resume found every job done)" >&2
  [ -n "$cases_re" ] && [ $resume = 0 ] && exit 2
fi
if [ $dry = 1 ]; then cat "$jobs"; echo "$total jobs"; exit 0; fi
echo "compute-sanitizer.sh: $total jobs on GPU(s) ${gpu_ids[*]}, $per_gpu per GPU; logs in $out"

racecheck_opts=(--racecheck-report hazard --kernel-name-exclude kns=ParallelReduce --kernel-name-exclude kns=ParallelScan)
echo 0 > "$out/.next"
worker() { # worker GPU
  local gpu=$1 n line t f c log extra rc t0 sums
  while true; do
    n=$(flock "$out/.next" bash -c 'n=$(($(cat "$1") + 1)); echo $n > "$1"; echo $n' _ "$out/.next")
    line=$(sed -n "${n}p" "$jobs")
    [ -n "$line" ] || return 0
    IFS=$'\t' read -r t f c <<< "$line"
    log=$out/$t-$f-$(printf '%s\n' "$c" | md5sum | cut -c1-8).log
    extra=()
    [ "$t" = racecheck ] && extra=("${racecheck_opts[@]}")
    t0=$SECONDS
    rc=0
    CUDA_VISIBLE_DEVICES=$gpu compute-sanitizer --tool "$t" --error-exitcode 9 --print-limit 20 "${extra[@]}" \
      "$build/tests/kdforge_tests_$f" "--test-case=${c//,/?}" > "$log" 2>&1 || rc=$?
    # doctest passes with no case run when the filter matches none: a failure here
    grep -q 'test cases: *1 |' "$log" || { [ $rc = 0 ] && rc=3; }
    sums=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|test cases:' | tr -s ' \n' ' ' || true)
    flock "$summary" bash -c 'printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$@" >> "$0"' "$summary" \
      "$t" "$f" "$rc" "$((SECONDS - t0))" "$(basename "$log")" "$sums" "$c"
  done
}
for ((w = 0; w < ${#gpu_ids[@]} * per_gpu; w++)); do worker "${gpu_ids[w % ${#gpu_ids[@]}]}" & done
wait
rm -f "$out/.next"

echo "compute-sanitizer.sh: finished jobs per tool and feature (all runs in $summary)"
awk -F'\t' '{k = $1 " " $2; n[k]++; if ($3 != 0) bad[k]++} END {for (k in n) printf "  %-28s %4d jobs, %d failed\n", k, n[k], bad[k]}' "$summary" | sort
failed=$(awk -F'\t' '$3 != 0' "$summary")
if [ -n "$failed" ]; then
  echo "compute-sanitizer.sh: FAILED (exit 9: the tool found errors; 3: the case did not run; other: the test failed):"
  printf '%s\n' "$failed" | awk -F'\t' '{printf "  %s %s exit %s: %s (%s)\n", $1, $2, $3, $7, $5}'
  exit 1
fi
echo "compute-sanitizer.sh: all clean"

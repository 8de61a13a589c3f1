#!/usr/bin/env bash
# Runs a workload list with a CPU build (OpenMP, all cores) and/or a GPU build
# (Cuda) of kdforge-bench, writing JSON lines and logs into one folder, then
# the report (markdown table of times and GPU/CPU speedups, plots when gnuplot
# is installed) with perf/report.py.
#
#   perf/compare.sh --cpu build-omp/perf/kdforge-bench --gpu build-cuda/perf/kdforge-bench --out DIR [--quick]
#
# Options:
#   --cpu BIN        CPU (OpenMP) binary; also runs the nanoflann baseline
#   --gpu BIN        GPU (Cuda) binary
#   --out DIR        results folder (created): cpu.jsonl, gpu.jsonl, logs/, report.md, plots/
#   --quick          perf/workloads/quick.txt instead of perf/workloads/default.txt
#   --workloads FILE another workload list ("label flags..." per line, # comments),
#                    e.g. perf/workloads/geometry.txt (every point distribution and query kind)
#   --only LABELS    comma-separated labels of the list to run (e.g. hu2015,wald2022)
#   --lib DIR        prepend DIR to LD_LIBRARY_PATH (shared libraries carried with the binaries)
#   --no-nanoflann   skip the nanoflann baseline
#   --no-report      do not run report.py at the end
#   -- FLAGS...      extra kdforge-bench flags appended to every run (e.g. -- --verify 200)
# Exit status: 0 when every run verified, 1 when one failed (the others still run).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cpu="" gpu="" out="" list="$here/workloads/default.txt" only="" nanoflann=1 report=1 extra=()
usage() { sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit "${1:-0}"; }
need() { [ $# -ge 2 ] || { echo "compare.sh: $1 needs a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cpu) need "$@"; cpu="$2"; shift 2 ;;
    --gpu) need "$@"; gpu="$2"; shift 2 ;;
    --out) need "$@"; out="$2"; shift 2 ;;
    --quick) list="$here/workloads/quick.txt"; shift ;;
    --workloads) need "$@"; list="$2"; shift 2 ;;
    --only) need "$@"; only="$2"; shift 2 ;;
    --lib) need "$@"; export LD_LIBRARY_PATH="$(cd "$2" && pwd)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"; shift 2 ;;
    --no-nanoflann) nanoflann=0; shift ;;
    --no-report) report=0; shift ;;
    -h|--help) usage 0 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "compare.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$out" ] || { echo "compare.sh: --out DIR is required (see --help)" >&2; exit 2; }
[ -n "$cpu$gpu" ] || { echo "compare.sh: give --cpu BIN and/or --gpu BIN (see --help)" >&2; exit 2; }
for b in $cpu $gpu; do
  [ -x "$b" ] || { echo "compare.sh: '$b' is not an executable kdforge-bench" >&2; exit 2; }
done
[ -r "$list" ] || { echo "compare.sh: cannot read the workload list '$list'" >&2; exit 2; }
mkdir -p "$out/logs" || exit 2

# Recommended OpenMP placement for the CPU runs (Kokkos warns without it).
export OMP_PROC_BIND="${OMP_PROC_BIND:-spread}" OMP_PLACES="${OMP_PLACES:-threads}"

{
  echo "# kdforge comparison run, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)"
  echo "# perf/compare.sh ${*:-}"
  echo "# workloads: $list"
  echo "# cpu: ${cpu:-none}   gpu: ${gpu:-none}"
} >> "$out/commands.txt"

failed=0 runs=0
start=$(date +%s)
run() { # run KIND BIN LABEL FLAGS...
  local kind="$1" bin="$2" label="$3"; shift 3
  local cmd=("$bin" "$@" --label "$label" --json "$out/$kind.jsonl")
  [ "$kind" = cpu ] && [ "$nanoflann" = 1 ] && cmd+=(--nanoflann)
  cmd+=("${extra[@]}")
  echo "${cmd[*]}" >> "$out/commands.txt"
  echo "[compare $(( $(date +%s) - start ))s] $kind $label: ${cmd[*]}" >&2
  runs=$((runs + 1))
  # Table and progress lines go to the terminal and to the logs.
  "${cmd[@]}" 2> >(tee "$out/logs/$kind-$label.err" >&2) | tee "$out/logs/$kind-$label.log"
  local rc=${PIPESTATUS[0]}
  if [ "$rc" -ne 0 ]; then
    sleep 1 # let the stderr tee finish
    echo "[compare] $kind $label FAILED (exit $rc); see $out/logs/$kind-$label.err" >&2
    grep -E "CHECK FAILED|error|kdforge-bench:" "$out/logs/$kind-$label.err" | head -5 >&2
    failed=$((failed + 1))
  fi
}

while read -r label flags; do
  case "$label" in ''|'#'*) continue ;; esac
  if [ -n "$only" ] && [[ ",$only," != *",$label,"* ]]; then continue; fi
  read -r -a args <<< "$flags"
  [ -n "$gpu" ] && run gpu "$gpu" "$label" "${args[@]}"
  [ -n "$cpu" ] && run cpu "$cpu" "$label" "${args[@]}"
done < "$list"

echo "[compare] $runs runs, $failed failed, $(( $(date +%s) - start )) s; results in $out" >&2
if [ "$report" = 1 ]; then
  if command -v python3 > /dev/null; then
    python3 "$here/report.py" --out "$out" "$out"/*.jsonl || failed=$((failed + 1))
  else
    echo "[compare] python3 not found: run 'python3 perf/report.py --out $out $out/*.jsonl' elsewhere" >&2
  fi
fi
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# Strong and weak scaling of the distributed tree over the GPUs of one node:
# kdforge-mpi-bench of a Cuda build, one rank per GPU (the rank's device is
# its local rank modulo the visible GPUs), G = 1, 2, 4, 8 as far as the node
# has GPUs; a markdown table and gnuplot files of the results.
#
#   bash perf/mpi/gpu-scaling.sh [program]   (default: build-cuda/perf/mpi/kdforge-mpi-bench)
#
# Every run checks a sample of queries per rank against one tree over the
# union of the points on rank 0 (--verify) and prints which transport ran
# (GPU-aware MPI or host staging) and each rank's GPU.
#
# Environment (defaults in brackets):
#   GPUS ["1 2 4 8", cut to the GPUs nvidia-smi lists]
#   STRONG_N ["10000000 100000000"]: strong scaling, points in all
#   STRONG_M [10000000]: strong scaling, queries in all
#   WEAK_N [25000000], WEAK_M [2500000]: weak scaling, per GPU
#   WEAK_DOMAIN [grow]: a unit cube per GPU (grow) or the unit cube divided (cube)
#   DIST [uniform]  OWNER [cell] (--query-owner)  OPS [knn,closest,radius]  K [8]
#   REPS [5]  VERIFY [2000]  OUT [gpu-scaling-out]  MPIRUN [mpirun]  MPIFLAGS
#   TABLE_ONLY [0]: 1 makes the table and plots again from OUT's CSV, running nothing
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bench=${1:-build-cuda/perf/mpi/kdforge-mpi-bench}
OUT=${OUT:-gpu-scaling-out}
csv=$OUT/gpu-scaling.csv
if [ "${TABLE_ONLY:-0}" != 1 ]; then
[ -x "$bench" ] || { echo "gpu-scaling.sh: $bench is not a program (ninja -C build-cuda kdforge-mpi-bench)" >&2; exit 1; }
visible=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$visible" -gt 0 ] || { echo "gpu-scaling.sh: nvidia-smi lists no GPU" >&2; exit 1; }
GPUS_WANTED=${GPUS:-1 2 4 8}
GPUS=""
for g in $GPUS_WANTED; do [ "$g" -le "$visible" ] && GPUS="$GPUS $g"; done
STRONG_N=${STRONG_N:-10000000 100000000}
STRONG_M=${STRONG_M:-10000000}
WEAK_N=${WEAK_N:-25000000}
WEAK_M=${WEAK_M:-2500000}
DIST=${DIST:-uniform}
OWNER=${OWNER:-cell}
OPS=${OPS:-knn,closest,radius}
K=${K:-8}
REPS=${REPS:-5}
VERIFY=${VERIFY:-2000}
MPIRUN=${MPIRUN:-mpirun}
MPIFLAGS=${MPIFLAGS:-}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
rm -f "$csv"
: > "$OUT/gpu-scaling.log"
nvidia-smi -L | tee -a "$OUT/gpu-scaling.log"

run() { # gpus scaling n m
  local g=$1 scaling=$2 n=$3 m=$4
  echo "=== $g GPU(s): $scaling scaling, $n points, $m queries" | tee -a "$OUT/gpu-scaling.log"
  # shellcheck disable=SC2086
  "$MPIRUN" -np "$g" --bind-to none $MPIFLAGS "$bench" --scaling "$scaling" --n "$n" --m "$m" --dist "$DIST" \
      --query-owner "$OWNER" --weak-domain "${WEAK_DOMAIN:-grow}" --ops "build,$OPS" --k "$K" --reps "$REPS" --verify "$VERIFY" \
      --csv "$csv" --label "${g}gpu" 2>&1 | tee -a "$OUT/gpu-scaling.log"
}

for n in $STRONG_N; do
  for g in $GPUS; do run "$g" strong "$n" "$STRONG_M"; done
done
for g in $GPUS; do run "$g" weak "$WEAK_N" "$WEAK_M"; done
fi

# The table: per series, time (ms, max over ranks) per GPU count, and the
# speedup t1 / tG with its efficiency t1 / (G tG) (strong) or the efficiency
# t1 / tG (weak); bytes between ranks per query at the largest G. The
# plain local tree's kNN on one GPU (knn-tree) is the distributed layer's
# baseline: its own column.
python3 - "$csv" "$OUT" <<'EOF'
import csv, sys, collections, os
path, out = sys.argv[1], sys.argv[2]
rows = list(csv.DictReader(open(path)))
series = collections.OrderedDict()
plain = {}
for r in rows:
    if r["op"] == "knn-tree":
        plain[(r["scaling"], r["n_total"] if r["scaling"] == "strong" else "", r["k"])] = float(r["total_ms"])
        continue
    key = (r["scaling"], r["n_total"] if r["scaling"] == "strong" else "", r["op"], r["k"] if r["op"] == "knn" else "")
    series.setdefault(key, collections.OrderedDict())[int(r["ranks"])] = r
gpus = sorted({int(r["ranks"]) for r in rows})
md = ["| scaling | points | queries | op | " + " | ".join(f"{g} GPU ms" for g in gpus) +
      f" | plain tree, 1 GPU ms | speedup {gpus[-1]} | efficiency {gpus[-1]} | B/query ({gpus[-1]}) | min B/query | transport | verified |",
      "|" + "---|" * (4 + len(gpus) + 7)]
plot = collections.defaultdict(list)
for (scaling, n, op, k), by in series.items():
    name = op + (f" k={k}" if k else "")
    t = [float(by[g]["total_ms"]) if g in by else float("nan") for g in gpus]
    last = by[max(by)]
    speedup = t[0] / t[-1]
    eff = speedup / gpus[-1] if scaling == "strong" else speedup
    pts = last["n_total"] if scaling == "strong" else f'{int(by[min(by)]["n_total"])}/GPU'
    qs = last["m_total"] if scaling == "strong" else f'{int(by[min(by)]["m_total"])}/GPU'
    checked = [v["verified"] for v in by.values() if v["verified"] not in ("", "-")]
    ok = "-" if not checked else "all" if all(v.startswith("ok") for v in checked) else "NOT ALL"
    base = plain.get((scaling, n, k)) if op == "knn" else None
    md.append(f"| {scaling} | {pts} | {qs} | {name} | " + " | ".join(f"{x:.2f}" for x in t) +
              (f" | {base:.2f} | " if base else " | - | ") +
              f"{speedup:.2f} | {eff:.0%} | {float(last['bytes_per_query']):.0f} | "
              f"{float(last['min_bytes_per_query']):.0f} | {last['transport']} | {ok} |")
    plot[(scaling, n)].append((name, t))
open(os.path.join(out, "gpu-scaling.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
for (scaling, n), lines in plot.items():
    base = f"gpu-{scaling}" + (f"-{n}" if n else "")
    with open(os.path.join(out, base + ".dat"), "w") as f:
        for name, t in lines:
            f.write(f"# {name}\n" + "".join(f"{g} {x}\n" for g, x in zip(gpus, t)) + "\n\n")
    with open(os.path.join(out, base + ".gp"), "w") as f:
        what = f"{int(n):,} points" if n else "points and queries per GPU fixed"
        f.write("set terminal pngcairo size 900,600 enhanced font 'Sans,10'\n")
        f.write(f"set output '{base}.png'\nset logscale x 2\nset logscale y\nset xlabel 'GPUs (one rank each)'\n")
        f.write("set ylabel 'ms (max over ranks)'\nset key outside right\nset grid\n")
        f.write(f"set title 'kdforge distributed tree, {scaling} scaling, {what}'\n")
        f.write("plot " + ", ".join(f"'{base}.dat' index {i} using 1:2 with linespoints title '{name}'"
                                    for i, (name, _) in enumerate(lines)) + "\n")
EOF
if command -v gnuplot >/dev/null; then
  (cd "$OUT" && for g in gpu-*.gp; do gnuplot "$g"; done)
fi
echo "table: $OUT/gpu-scaling.md, data: $csv"

#!/usr/bin/env bash
# Strong and weak scaling of the distributed tree over the cores of one
# machine: kdforge-mpi-bench with 1, 2, 4, 8, 16 ranks of one core each
# (mpirun --bind-to core, OMP_NUM_THREADS=1) and, for comparison, 1 rank of
# 16 threads (OpenMP); a markdown table and gnuplot plots of the results.
#
#   bash perf/mpi/scaling.sh [build folder]          (default: build-omp)
#
# Environment (defaults in brackets):
#   RANKS ["1 2 4 8 16"]  THREADS [16: the one-rank run's threads]
#   N, M [1000000]: strong scaling, points and queries in all
#   WEAK_N, WEAK_M [1000000]: weak scaling, per rank (each rank's cell a unit cube:
#     kdforge-mpi-bench --weak-domain grow, its default)
#   DISTS ["uniform clustered"]  OWNERS ["any cell"] (--query-owner)
#   OPS [knn,closest,radius]  K [1,8]  REPS [5]  VERIFY [1000]
#   OUT [scaling-out]: scaling.csv, scaling.md, *.png
#   MPIRUN [mpirun]  MPIFLAGS: added to every mpirun (e.g. --oversubscribe)
#   BENCH [<build folder>/perf/mpi/kdforge-mpi-bench]: the program (e.g. from an Open MPI bundle)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
build=${1:-build-omp}
bench=${BENCH:-$build/perf/mpi/kdforge-mpi-bench}
[ -x "$bench" ] || { echo "scaling.sh: $bench not built (ninja -C $build kdforge-mpi-bench)" >&2; exit 1; }
RANKS=${RANKS:-1 2 4 8 16}
THREADS=${THREADS:-16}
N=${N:-1000000}
M=${M:-1000000}
WEAK_N=${WEAK_N:-1000000}
WEAK_M=${WEAK_M:-1000000}
DISTS=${DISTS:-uniform clustered}
OWNERS=${OWNERS:-any cell}
OPS=${OPS:-knn,closest,radius}
K=${K:-1,8}
REPS=${REPS:-5}
VERIFY=${VERIFY:-1000}
OUT=${OUT:-scaling-out}
MPIRUN=${MPIRUN:-mpirun}
MPIFLAGS=${MPIFLAGS:-}
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
csv=$OUT/scaling.csv
rm -f "$csv"

run() { # label ranks threads scaling dist owner n m
  local label=$1 np=$2 threads=$3 scaling=$4 dist=$5 owner=$6 n=$7 m=$8 bind=(--bind-to core)
  local env=(OMP_NUM_THREADS="$threads" OMP_PROC_BIND=false)
  if [ "$threads" -gt 1 ]; then bind=(--bind-to none); env=(OMP_NUM_THREADS="$threads" OMP_PROC_BIND=spread OMP_PLACES=cores); fi
  echo "=== $label: $scaling, $dist, queries owned by $owner"
  # shellcheck disable=SC2086
  env "${env[@]}" "$MPIRUN" -np "$np" "${bind[@]}" $MPIFLAGS "$bench" --scaling "$scaling" --n "$n" --m "$m" \
      --dist "$dist" --query-owner "$owner" --ops "build,$OPS" --k "$K" --reps "$REPS" --verify "$VERIFY" \
      --csv "$csv" --label "$label" | tee -a "$OUT/scaling.log"
}

: > "$OUT/scaling.log"
for dist in $DISTS; do
  for owner in $OWNERS; do
    run "1x$THREADS" 1 "$THREADS" strong "$dist" "$owner" "$N" "$M"
    for p in $RANKS; do run "${p}x1" "$p" 1 strong "$dist" "$owner" "$N" "$M"; done
    run "1x$THREADS" 1 "$THREADS" weak "$dist" "$owner" "$WEAK_N" "$WEAK_M"
    for p in $RANKS; do run "${p}x1" "$p" 1 weak "$dist" "$owner" "$WEAK_N" "$WEAK_M"; done
  done
done

# The table: per series, time (ms) per rank count, and against one rank of
# $THREADS threads (strong) or one rank (weak: efficiency t1 / tP).
python3 - "$csv" "$OUT" "$THREADS" <<'EOF'
import csv, sys, collections, os
path, out, threads = sys.argv[1], sys.argv[2], sys.argv[3]
rows = list(csv.DictReader(open(path)))
series = collections.OrderedDict()
for r in rows:
    key = (r["scaling"], r["dist"], r["query_owner"], r["op"], r["k"] if r["op"] == "knn" else "")
    series.setdefault(key, {})[r["label"]] = r
labels = []
for r in rows:
    if r["label"] not in labels:
        labels.append(r["label"])
ranks = [l for l in labels if l.endswith("x1")]
ref = f"1x{threads}"
md = [f"| scaling | points | queries | op | " + " | ".join(f"{l} ms" for l in ranks) +
      f" | {ref} ms | {ranks[-1]} / {ref} | efficiency {ranks[-1]} | B/query ({ranks[-1]}) | min B/query |",
      "|" + "---|" * (4 + len(ranks) + 5)]
plots = collections.defaultdict(list)
for (scaling, dist, owner, op, k), by in series.items():
    name = op + (f" k={k}" if k else "")
    times = [float(by[l]["total_ms"]) if l in by else float("nan") for l in ranks]
    t_ref = float(by[ref]["total_ms"]) if ref in by else float("nan")
    last = by.get(ranks[-1], {})
    t1 = times[0]
    if scaling == "strong":
        eff = t1 / (times[-1] * int(ranks[-1][:-2]))
    else:
        eff = t1 / times[-1]
    md.append(f"| {scaling} | {dist} | {owner} | {name} | " + " | ".join(f"{t:.2f}" for t in times) +
              f" | {t_ref:.2f} | {times[-1] / t_ref:.2f} | {eff:.0%} | {float(last.get('bytes_per_query', 'nan')):.0f} |"
              f" {float(last.get('min_bytes_per_query', 'nan')):.0f} |")
    if op in ("build", "knn", "closest", "radius"):
        plots[(scaling, dist, owner)].append((name, times, t_ref))
open(os.path.join(out, "scaling.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
# gnuplot: time vs ranks (log-log), one line per operation, the one-rank
# multi-threaded time as a dashed level
for (scaling, dist, owner), lines in plots.items():
    base = f"{scaling}-{dist}-{owner}"
    with open(os.path.join(out, base + ".dat"), "w") as f:
        for name, times, t_ref in lines:
            f.write(f"# {name}\n")
            for l, t in zip(ranks, times):
                f.write(f"{l[:-2]} {t} {t_ref}\n")
            f.write("\n\n")
    with open(os.path.join(out, base + ".gp"), "w") as f:
        f.write("set terminal pngcairo size 900,600 enhanced font 'Sans,10'\n")
        f.write(f"set output '{base}.png'\nset logscale xy\nset xlabel 'ranks (one core each)'\n")
        f.write(f"set ylabel 'ms (max over ranks)'\nset key outside right\nset grid\n")
        f.write(f"set title 'kdforge distributed tree, {scaling} scaling, {dist} points, queries owned by {owner}'\n")
        f.write("plot " + ", ".join(
            f"'{base}.dat' index {i} using 1:2 with linespoints title '{name}', "
            f"'{base}.dat' index {i} using 1:3 with lines dashtype 2 lc {i + 1} title '{name}, 1 rank x {threads} threads'"
            for i, (name, _, _) in enumerate(lines)) + "\n")
EOF
if command -v gnuplot >/dev/null; then
  (cd "$OUT" && for g in *.gp; do gnuplot "$g"; done)
  echo "plots: $(ls "$OUT"/*.png | tr '\n' ' ')"
fi
echo "table: $OUT/scaling.md, data: $csv"

#!/usr/bin/env python3
"""kdforge comparison report: reads kdforge-bench JSON records (JSON lines, or
JSON arrays/objects) from one or more files and writes

  OUT/report.md        per workload and operation: median times of every
                       builder on the CPU (OpenMP) and GPU (Cuda) builds, the
                       GPU/CPU speedup, the nanoflann baseline and, labelled
                       "from the paper", the published numbers of
                       perf/paper_numbers.json for the same sizes
  OUT/plots/*.gp,*.dat gnuplot scripts and data: time vs N (log-log, one line
                       per builder and backend, paper numbers dashed) and
                       GPU/CPU speedup vs N
  OUT/plots/*.png      the plots, when gnuplot is installed (else skipped with
                       a message: run the scripts where gnuplot is)

When the records hold several point distributions (perf/workloads/geometry.txt),
report.md starts with one table "time per distribution" (rows: distribution and
query kind; columns: kNN k=8, closest, radius on the CPU, the GPU and nanoflann)
and plots/time_per_distribution.png shows it as log-scale bars. Time-vs-N plots
are written only for workloads with more than one N.

  python3 perf/report.py --out DIR results/*.jsonl [--papers perf/paper_numbers.json]

Python 3 standard library only. Only rows whose check passed (ok: true) are used.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
from collections import OrderedDict, defaultdict

GPU_BACKENDS = {"Cuda", "HIP", "SYCL"}


def load_records(paths):
    records, bad = [], 0
    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            sys.exit(f"report.py: cannot read {path}: {e}")
        stripped = text.lstrip()
        if stripped.startswith("["):
            items = json.loads(text)
        else:
            items = []
            for lineno, line in enumerate(text.splitlines(), 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    items.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"report.py: {path}:{lineno}: skipped, not JSON ({e})", file=sys.stderr)
                    bad += 1
        for r in items if isinstance(items, list) else [items]:
            if isinstance(r, dict) and r.get("schema", "").startswith("kdforge-bench/"):
                records.append(r)
    return records, bad


def op_key(r):
    """(sort key, name) of a row's operation, e.g. 'knn k=4'."""
    op = r["op"]
    order = {"build": 0, "knn": 1, "closest": 2, "radius_count": 3, "radius": 4}.get(op, 9)
    if op == "knn":
        return (order, r.get("k") or 0), f"knn k={r.get('k')}"
    return (order, 0), op


def is_gpu(r):
    return r.get("backend") in GPU_BACKENDS


def series_name(r):
    if r["impl"] == "nanoflann":
        return "nanoflann (CPU)"
    return f"kdforge {r['builder']} ({r['backend']})"


def workload_label(r):
    if r.get("label"):
        return r["label"]
    return f"D{r['dim']}-{r['dtype']}-{r['dist']}-q{r['queries']}"


def fmt_ms(x):
    if x is None:
        return "—"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    if x >= 1:
        return f"{x:.2f}"
    return f"{x:.3f}"


def fmt_speedup(num, den):
    if num is None or den is None or den <= 0:
        return "—"
    s = num / den
    return f"{s:.1f}x" if s >= 10 else f"{s:.2f}x"


def paper_matches(papers, label, op_name, r):
    """Paper series for this workload and operation: list of (series, workload entry)."""
    out = []
    for p in papers.get("papers", []):
        if p.get("workload") != label:
            continue
        for s in p.get("series", []):
            name = s["op"] if s["op"] != "knn" else f"knn k={s.get('k')}"
            if name == op_name:
                out.append((s, p))
    return out


def paper_value_text(s, n):
    key = str(n)
    text = (s.get("text") or {}).get(key)
    ms = (s.get("ms") or {}).get(key)
    if ms is None and text is None:
        return None
    return text if text is not None else f"{ms:g} ms"  # as printed in the paper


def gp_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# The "time per distribution" table: --dist names in kdforge-bench's order,
# the operations (op, k, column name) and where they ran.
DIST_ORDER = ["uniform", "clustered", "sphere", "plane", "tilted-plane", "line", "lidar", "duplicates",
              "duplicates-all", "anisotropic"]
DIST_OPS = [("knn", 8, "kNN k=8"), ("closest", None, "closest"), ("radius", None, "radius")]
DIST_SIDES = ["CPU", "GPU", "nanoflann"]


def dist_name(r):
    if r.get("dist") == "file" and r.get("points_file"):
        return os.path.basename(r["points_file"])
    return r.get("dist") or "?"


def queries_name(r):
    if r.get("queries") == "file" and r.get("queries_file"):
        return os.path.basename(r["queries_file"])
    return r.get("queries") or "?"


def fmt_n(n):
    for unit, div in (("M", 1000000), ("K", 1000)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def distribution_rows(good):
    """(rows, columns) of the time-per-distribution table, or None when the
    records hold fewer than two distributions. A row is (key, cells, mean
    neighbours of the radius op); cells map (op column, side) to median ms
    of kdforge's auto builder where measured (else its fastest builder) or
    of nanoflann; the latest record of a builder wins."""
    if len({dist_name(r) for r in good}) < 2:
        return None
    found = defaultdict(lambda: defaultdict(dict))
    means = {}
    for r in sorted(good, key=lambda r: r.get("time", "")):
        op = next((o for o in DIST_OPS if o[0] == r["op"] and (o[1] is None or r.get("k") == o[1])), None)
        if op is None:
            continue
        side = "nanoflann" if r["impl"] == "nanoflann" else ("GPU" if is_gpu(r) else "CPU")
        key = (dist_name(r), queries_name(r), r["dim"], r["dtype"], r["n"], r["m"])
        found[key][(op[2], side)][r["builder"]] = r["time_ms"]["median"]
        if r["op"] == "radius" and r.get("mean_neighbors") is not None:
            means[key] = r["mean_neighbors"]
    if not found:
        return None

    def order(key):
        d, q = key[0], key[1]
        qi = next((i for i, p in enumerate(("uniform", "cube", "jitter", "same", "far")) if q.startswith(p)), 9)
        return (DIST_ORDER.index(d) if d in DIST_ORDER else len(DIST_ORDER), d, qi, q) + key[2:]

    rows = []
    for key in sorted(found, key=order):
        cells = {c: (by["auto"] if "auto" in by else min(by.values())) for c, by in found[key].items()}
        rows.append((key, cells, means.get(key)))
    columns = [(name, side) for _, _, name in DIST_OPS for side in DIST_SIDES
               if any((name, side) in cells for _, cells, _ in rows)]
    return rows, columns


def distribution_label(key, show_dim, show_n):
    d, q, dim, dtype, n, m = key
    text = f"{d} / {q}"
    if show_dim:
        text += f" D{dim} {dtype}"
    if show_n:
        text += f" N={fmt_n(n)}"
    if m != n:
        text += f" M={fmt_n(m)}"
    return text


def distribution_plot(plots_dir, rows, columns):
    """Writes the gnuplot script and data of the time-per-distribution bars
    (one panel per operation, log-scale time); returns the script's path."""
    show_dim = len({(k[2], k[3]) for k, _, _ in rows}) > 1
    show_n = len({k[4] for k, _, _ in rows}) > 1
    dat = "time_per_distribution.dat"
    with open(os.path.join(plots_dir, dat), "w") as f:
        f.write("# distribution/queries " + " ".join(f"{gp_quote(n + ' ' + s)}" for n, s in columns) + " (median ms)\n")
        for key, cells, _ in rows:
            vals = [str(cells[c]) if c in cells else "-" for c in columns]
            f.write(gp_quote(distribution_label(key, show_dim, show_n)) + " " + " ".join(vals) + "\n")
    ops = [name for _, _, name in DIST_OPS if any(c[0] == name for c in columns)]
    name = "time_per_distribution"
    gp = os.path.join(plots_dir, name + ".gp")
    colours = {"CPU": "'#1f77b4'", "GPU": "'#2ca02c'", "nanoflann": "'#444444'"}
    with open(gp, "w") as f:
        f.write("# gnuplot script written by perf/report.py; run in this folder: gnuplot " + name + ".gp\n")
        f.write(f"set terminal pngcairo size {max(1000, 60 * len(rows) + 200)},{330 * len(ops) + 150} "
                "enhanced font 'Sans,10'\n")
        f.write(f"set output {gp_quote(name + '.png')}\n")
        f.write("set datafile missing '-'\nset style data histograms\nset style histogram clustered gap 1\n")
        f.write("set style fill solid 0.85 border -1\nset boxwidth 0.9\nset logscale y\n")
        f.write("set grid ytics mytics\nset ylabel 'median time [ms]'\nset key outside right top noenhanced\n")
        f.write("set xtics rotate by 30 right noenhanced\n")
        f.write(f"set multiplot layout {len(ops)},1 title {gp_quote('kdforge: time per distribution (median, log scale)')} noenhanced\n")
        for op in ops:
            lines = []
            for i, (cname, side) in enumerate(columns):
                if cname != op:
                    continue
                title = {"CPU": "kdforge CPU", "GPU": "kdforge GPU", "nanoflann": "nanoflann CPU"}[side]
                src = gp_quote(dat) if not lines else "''"
                lines.append(f"{src} using {i + 2}{':xtic(1)' if not lines else ''} lc rgb {colours[side]} "
                             f"title {gp_quote(title)}")
            f.write(f"set title {gp_quote(op)} noenhanced\n")
            f.write("plot " + ", \\\n     ".join(lines) + "\n")
        f.write("unset multiplot\n")
    return gp


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+", help="kdforge-bench --json outputs")
    ap.add_argument("--out", required=True, help="folder for report.md and plots/")
    ap.add_argument("--papers", default=os.path.join(here, "paper_numbers.json"),
                    help="published numbers (default: perf/paper_numbers.json; 'none' to leave them out)")
    ap.add_argument("--no-plots", action="store_true", help="write no gnuplot scripts or PNGs")
    args = ap.parse_args()

    records, bad = load_records(args.files)
    if not records:
        sys.exit("report.py: no kdforge-bench records in " + ", ".join(args.files))
    papers = {}
    if args.papers != "none":
        try:
            with open(args.papers, encoding="utf-8") as f:
                papers = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            print(f"report.py: paper numbers not used ({args.papers}: {e})", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)

    failed = [r for r in records if not r.get("ok")]
    good = [r for r in records if r.get("ok")]

    # (label, op) -> n -> series -> record (the latest one wins)
    table = defaultdict(lambda: defaultdict(dict))
    op_sort = {}
    machines = OrderedDict()
    for r in sorted(good, key=lambda r: r.get("time", "")):
        label = workload_label(r)
        sk, name = op_key(r)
        op_sort[(label, name)] = sk
        table[(label, name)][r["n"]][series_name(r)] = r
        mkey = (r["backend"], r.get("device"), r.get("concurrency"))
        machines[mkey] = r

    md = []
    md.append("# kdforge comparison report\n")
    md.append("Median times in milliseconds of fenced repetitions after warm-up; every row passed its "
              "brute-force check on a sample of queries. Speedup = CPU time / GPU time of the same builder; "
              "\"GPU (or CPU) vs nanoflann\" = nanoflann's time / kdforge's (below 1: kdforge is slower). "
              "`nanoflann`: single-threaded build, OpenMP-parallel queries on the CPU machine. Columns "
              "marked *from the paper* are published numbers on the hardware named there, not measured here.\n")
    md.append("## Machines\n")
    md.append("| backend | device | Kokkos concurrency | CPU | kdforge git | Kokkos | first record |")
    md.append("|---|---|---|---|---|---|---|")
    for (backend, device, conc), r in machines.items():
        md.append(f"| {backend} | {device} | {conc} | {r.get('cpu_model')} | {r.get('git')} | "
                  f"{r.get('kokkos_version')} | {r.get('time')} |")
    md.append("")
    if failed:
        md.append(f"**{len(failed)} record(s) failed their check and are left out**: " +
                  ", ".join(sorted({f"{workload_label(r)} {op_key(r)[1]} N={r['n']} {series_name(r)}" for r in failed})) + "\n")

    dist_table = distribution_rows(good)
    if dist_table:
        rows_d, columns = dist_table
        show_dim = len({(k[2], k[3]) for k, _, _ in rows_d}) > 1
        have_mean = any(m is not None for _, _, m in rows_d)
        md.append("## Time per distribution\n")
        md.append("Median ms of the queries per point distribution and query kind: kdforge on the CPU and "
                  "GPU builds (builder `auto` where measured, else the fastest builder) and the nanoflann "
                  "baseline on the CPU machine. Radius: the measured mean neighbour count is shown; "
                  "`far` queries find none by design. Plot: `plots/time_per_distribution.png`.\n")
        head = ["distribution", "queries"] + (["D"] if show_dim else []) + ["N", "M"]
        head += [f"{name} {side}" for name, side in columns] + (["radius mean neighbours"] if have_mean else [])
        md.append("| " + " | ".join(head) + " |")
        md.append("|" + "---|" * len(head))
        for key, cells, mean in rows_d:
            d, q, dim, dtype, n, m = key
            row = [d, q] + ([f"{dim} {dtype}"] if show_dim else []) + [str(n), str(m)]
            row += [fmt_ms(cells.get(c)) for c in columns]
            if have_mean:
                row.append("—" if mean is None else f"{mean:.1f}")
            md.append("| " + " | ".join(row) + " |")
        md.append("")

    plots_dir = os.path.join(args.out, "plots")
    plot_jobs = []
    for (label, op_name) in sorted(table, key=lambda k: (k[0], op_sort[k])):
        rows = table[(label, op_name)]
        any_r = next(iter(next(iter(rows.values())).values()))
        builders = sorted({r["builder"] for n in rows for s, r in rows[n].items() if r["impl"] == "kdforge"})
        have_gpu = any(is_gpu(r) for n in rows for r in rows[n].values())
        have_cpu = any(not is_gpu(r) and r["impl"] == "kdforge" for n in rows for r in rows[n].values())
        have_nf = any(r["impl"] == "nanoflann" for n in rows for r in rows[n].values())
        pm = paper_matches(papers, label, op_name, any_r)
        extra = []
        if any_r.get("op") in ("knn", "closest", "radius", "radius_count"):
            extra.append(f"M = {any_r.get('m')} {any_r.get('queries')} queries")
        if any_r.get("op") in ("radius", "radius_count") and any_r.get("mean_neighbors") is not None:
            extra.append(f"mean neighbours {any_r['mean_neighbors']:.1f}")
        md.append(f"## {label}: {op_name}\n")
        md.append(f"D = {any_r['dim']}, {any_r['dtype']}, {any_r['dist']} points, split {any_r['split']}"
                  + (", " + ", ".join(extra) if extra else "") + ".\n")
        head = ["N", "builder"]
        if have_cpu:
            head.append("CPU ms")
        if have_gpu:
            head.append("GPU ms")
        if have_cpu and have_gpu:
            head.append("GPU speedup")
        if have_nf:
            head.append("nanoflann ms")
            if have_gpu:
                head.append("GPU vs nanoflann")
            elif have_cpu:
                head.append("CPU vs nanoflann")
        if pm:
            head.append("from the paper")
        md.append("| " + " | ".join(head) + " |")
        md.append("|" + "---|" * len(head))
        for n in sorted(rows):
            by = rows[n]
            nf = by.get("nanoflann (CPU)")
            nf_ms = nf["time_ms"]["median"] if nf else None
            paper_cells, groups = [], OrderedDict()
            for s, p in pm:
                v = paper_value_text(s, n)
                if v is None:
                    continue
                if s.get("group"):  # e.g. one size measured with several settings: show the fastest
                    ms = (s.get("ms") or {}).get(str(n))
                    best = groups.get(s["group"])
                    if ms is not None and (best is None or ms < best[0]):
                        groups[s["group"]] = (ms, s)
                    continue
                paper_cells.append(f"{s['name']}, {s['hardware']}: {v}")
            for g, (ms, s) in groups.items():
                paper_cells.append(f"{g}, {s['hardware']}: {ms:g} ms (TPB {s.get('tpb')})")
            for i, b in enumerate(builders or ["—"]):
                cpu = next((r for r in by.values() if r["impl"] == "kdforge" and r["builder"] == b and not is_gpu(r)), None)
                gpu = next((r for r in by.values() if r["impl"] == "kdforge" and r["builder"] == b and is_gpu(r)), None)
                cpu_ms = cpu["time_ms"]["median"] if cpu else None
                gpu_ms = gpu["time_ms"]["median"] if gpu else None
                cells = [str(n) if i == 0 else "", b]
                if have_cpu:
                    cells.append(fmt_ms(cpu_ms))
                if have_gpu:
                    cells.append(fmt_ms(gpu_ms))
                if have_cpu and have_gpu:
                    cells.append(fmt_speedup(cpu_ms, gpu_ms))
                if have_nf:
                    cells.append(fmt_ms(nf_ms) if i == 0 else "")
                    cells.append(fmt_speedup(nf_ms, gpu_ms if have_gpu else cpu_ms))
                if pm:
                    cells.append("; ".join(paper_cells) if i == 0 else "")
                md.append("| " + " | ".join(cells) + " |")
        md.append("")
        plot_jobs.append((label, op_name, rows, builders, pm))

    # The published numbers in full, with their hardware.
    if papers.get("papers"):
        md.append("## From the papers (published numbers, not measured here)\n")
        for p in papers["papers"]:
            md.append(f"**{p['workload']}**: {p['citation']} {p['table']}. {p.get('setup', '')} "
                      + (p.get("unit_note", "")) + "\n")
            sizes = sorted({int(n) for s in p["series"] for n in list((s.get("ms") or {}).keys()) + list((s.get("text") or {}).keys())})
            md.append("| series | hardware | " + " | ".join(str(n) for n in sizes) + " |")
            md.append("|---|---|" + "---|" * len(sizes))
            for s in p["series"]:
                cells = [paper_value_text(s, n) or "" for n in sizes]
                md.append(f"| {s['name']} | {s['hardware']} | " + " | ".join(c.replace(' ms', '') for c in cells) + " |")
            md.append("")
        if papers.get("left_out"):
            md.append("Left out: " + " ".join(papers["left_out"]) + "\n")

    pngs, scripts = [], []
    if not args.no_plots and dist_table:
        os.makedirs(plots_dir, exist_ok=True)
        scripts.append(distribution_plot(plots_dir, *dist_table))
    # A time-vs-N line needs two sizes: single-N workloads are in the tables only.
    plot_jobs = [j for j in plot_jobs if len(j[2]) > 1]
    if not args.no_plots and plot_jobs:
        os.makedirs(plots_dir, exist_ok=True)
        for label, op_name, rows, builders, pm in plot_jobs:
            base = f"{label}_{op_name.replace(' ', '_').replace('=', '')}"
            series = defaultdict(list)
            for n in sorted(rows):
                for sname, r in rows[n].items():
                    series[sname].append((n, r["time_ms"]["median"]))
            lines = []
            for i, (sname, pts) in enumerate(sorted(series.items())):
                dat = f"{base}_s{i}.dat"
                with open(os.path.join(plots_dir, dat), "w") as f:
                    f.write(f"# {sname}: N median_ms\n" + "".join(f"{n} {t}\n" for n, t in pts))
                # one colour per builder; GPU solid, CPU dash-dot, nanoflann black dotted
                b = sname.split(" ")[1] if sname.startswith("kdforge ") else None
                style = (f"lc {builders.index(b) + 1 if b in builders else 8} "
                         + ("dt 1 pt 7" if any(f"({g})" in sname for g in GPU_BACKENDS) else "dt 4 pt 5")
                         if b else "lc rgb 'black' dt 3 pt 9")
                lines.append(f"{gp_quote(dat)} using 1:2 with linespoints {style} lw 2 title {gp_quote(sname)}")
            for j, (s, p) in enumerate(pm):
                pts = sorted((int(n), v) for n, v in (s.get("ms") or {}).items() if v is not None)
                if not pts:
                    continue
                dat = f"{base}_paper{j}.dat"
                with open(os.path.join(plots_dir, dat), "w") as f:
                    f.write(f"# from the paper: {s['name']}, {s['hardware']}\n" + "".join(f"{n} {t}\n" for n, t in pts))
                lines.append(f"{gp_quote(dat)} using 1:2 with linespoints lc {j + 6} dt 2 lw 1 pt 4 "
                             f"title {gp_quote('from the paper: ' + s['name'] + ', ' + s['hardware'])}")
            plots = [(f"time_{base}", f"kdforge {label}: {op_name}, median time", "time [ms]", lines)]
            # Speedups: GPU over CPU per builder, and GPU over nanoflann.
            sp_lines = []
            for b in builders:
                pts = []
                for n in sorted(rows):
                    cpu = next((r for r in rows[n].values() if r["impl"] == "kdforge" and r["builder"] == b and not is_gpu(r)), None)
                    gpu = next((r for r in rows[n].values() if r["impl"] == "kdforge" and r["builder"] == b and is_gpu(r)), None)
                    if cpu and gpu:
                        pts.append((n, cpu["time_ms"]["median"] / gpu["time_ms"]["median"]))
                    nf = rows[n].get("nanoflann (CPU)")
                if pts:
                    dat = f"{base}_speedup_{b}.dat"
                    with open(os.path.join(plots_dir, dat), "w") as f:
                        f.write("".join(f"{n} {s}\n" for n, s in pts))
                    sp_lines.append(f"{gp_quote(dat)} using 1:2 with linespoints lw 2 pt 7 title {gp_quote(b + ': GPU vs CPU (same builder)')}")
                pts = []
                for n in sorted(rows):
                    gpu = next((r for r in rows[n].values() if r["impl"] == "kdforge" and r["builder"] == b and is_gpu(r)), None)
                    nf = rows[n].get("nanoflann (CPU)")
                    if gpu and nf:
                        pts.append((n, nf["time_ms"]["median"] / gpu["time_ms"]["median"]))
                if pts:
                    dat = f"{base}_speedup_{b}_nanoflann.dat"
                    with open(os.path.join(plots_dir, dat), "w") as f:
                        f.write("".join(f"{n} {s}\n" for n, s in pts))
                    sp_lines.append(f"{gp_quote(dat)} using 1:2 with linespoints dt 2 lw 2 pt 6 title {gp_quote(b + ' GPU vs nanoflann CPU')}")
            if sp_lines:
                plots.append((f"speedup_{base}", f"kdforge {label}: {op_name}, GPU speedup", "speedup [x]", sp_lines))
            for name, title, ylabel, plines in plots:
                if not plines:
                    continue
                gp = os.path.join(plots_dir, name + ".gp")
                with open(gp, "w") as f:
                    f.write("# gnuplot script written by perf/report.py; run in this folder: gnuplot " + name + ".gp\n")
                    f.write("set terminal pngcairo size 1000,750 enhanced font 'Sans,10'\n")
                    f.write(f"set output {gp_quote(name + '.png')}\n")
                    f.write(f"set title {gp_quote(title)} noenhanced\n")
                    f.write("set logscale xy\nset grid xtics ytics mxtics mytics\n")
                    f.write("set xlabel 'N (points)'\n" + f"set ylabel {gp_quote(ylabel)}\n")
                    f.write("set key below noenhanced\nset format x '10^{%L}'\n")
                    f.write("plot " + ", \\\n     ".join(plines) + "\n")
                scripts.append(gp)

    report = os.path.join(args.out, "report.md")
    with open(report, "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")

    if scripts:
        gnuplot = shutil.which("gnuplot")
        if gnuplot is None:
            print(f"report.py: gnuplot not found: plots skipped; the scripts are in {plots_dir} "
                  f"(copy the folder to a machine with gnuplot and run 'gnuplot *.gp' there, or rerun report.py)",
                  file=sys.stderr)
        else:
            for gp in scripts:
                res = subprocess.run([gnuplot, os.path.basename(gp)], cwd=plots_dir, capture_output=True, text=True)
                png = gp[:-3] + ".png"
                if res.returncode == 0 and os.path.exists(png):
                    pngs.append(png)
                else:
                    print(f"report.py: gnuplot failed on {gp}: {res.stderr.strip()[:300]}", file=sys.stderr)

    print("\n".join(md))
    print(f"report: {report}")
    for p in pngs:
        print(f"plot: {p}")
    if bad:
        print(f"report.py: {bad} line(s) were not JSON and were skipped", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

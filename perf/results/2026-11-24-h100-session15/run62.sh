#!/usr/bin/env bash
# session 15, run 62: where a kNN k = 8 call's time goes (kernel durations at real clocks, full ncu of the k8 kernel, SASS stall samples)
set -u
for f in .dev/gpu/bench.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name,clocks.max.sm,clocks.max.mem --format=csv,noheader
which nsys ncu compute-sanitizer
B=".dev/gpu/bench --n 1000000 --m 1000000 --builder partition --quiet"
echo "== bench"; $B --reps 10 --k 1,8 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror"
echo "== kernel durations (real clocks)"
ncu --clock-control none --metrics gpu__time_duration.sum --kernel-name-base demangled --csv $B --reps 2 --warmup 0 --k 8 --ops knn > $OUT/durations.csv 2>$OUT/durations.err; echo rc=$?
python3 - <<'PY'
import csv,os,re
rows=list(csv.reader(open(os.environ['OUT']+'/durations.csv')))
h=None
for r in rows:
    if 'Kernel Name' in r: h=r; continue
    if h and len(r)==len(h):
        d=dict(zip(h,r)); n=d['Kernel Name']; n=re.sub(r'\(.*','',n)[:110]
        print(d['ID'], d['Metric Value'], d['Metric Unit'], n[-110:])
PY
echo "== full ncu of one k8 kernel"
ncu --set full --import-source no --kernel-name-base demangled -k regex:KnnSortedFunctor -s 1 -c 1 -o $OUT/k8 $B --reps 2 --warmup 0 --k 8 --ops knn > $OUT/ncu_full.log 2>&1; echo rc=$?
ncu -i $OUT/k8.ncu-rep --page details > $OUT/k8_details.txt 2>&1
ncu -i $OUT/k8.ncu-rep --page source --csv --print-source sass > $OUT/k8_sass.csv 2>&1
wc -l $OUT/k8_details.txt $OUT/k8_sass.csv

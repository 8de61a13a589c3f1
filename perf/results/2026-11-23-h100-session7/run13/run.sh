#!/usr/bin/env bash
# session 7, run 13: workspace + coarse Morton sort + scan over M+1 (new) vs session 6 main (old) on the GPU;
# the stack walk with cell distances on GPU and CPU; traces; 10M; CPU rows on the host
set -u
for f in .dev/s6c/kdforge-bench-cuda.xz .dev/s7/kdforge-bench-cuda.xz .dev/s7/kdforge-bench-omp.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
export LD_LIBRARY_PATH=$PWD/.dev/lib:${LD_LIBRARY_PATH:-}
OLD=.dev/s6c/kdforge-bench-cuda; NEW=.dev/s7/kdforge-bench-cuda; C=.dev/s7/kdforge-bench-omp
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
F='grep -v ^kdforge.0\|^N\|^all'
for r in 1 2; do for v in OLD NEW; do
  echo "== $v round $r"
  timeout 60 ${!v} --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius_count,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
done; done 2>&1 | tee $OUT/ab.txt
echo "== NEW --results fresh"; timeout 60 $NEW --n 1000000 --m 1000000 --reps 10 --builder partition --k 8 --ops knn,closest,radius --results fresh --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
echo "== NEW --traversal stack"; timeout 60 $NEW --n 1000000 --m 1000000 --reps 10 --builder partition --k 1,8,16 --ops knn,closest,radius --traversal stack --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
echo "== NEW trace"; timeout 60 $NEW --n 1000000 --m 1000000 --reps 2 --builder partition --k 8 --ops knn,closest,radius --trace --quiet > $OUT/trace.txt 2>&1; grep "^trace" $OUT/trace.txt | cut -c1-100
echo "== NEW 10M"; timeout 90 $NEW --n 10000000 --m 1000000 --reps 5 --builder partition --k 8 --ops build,knn,closest,radius --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105
export OMP_PLACES=threads OMP_PROC_BIND=spread OMP_NUM_THREADS=16
echo "== CPU 16 threads"; timeout 150 $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 1,8,16 --ops build,knn,closest,radius --nanoflann --quiet 2>&1 | tee $OUT/cpu_16.txt | grep -v "^kdforge 0\|^N " | cut -c1-105
echo "== CPU 16 threads, stack_free (unchanged walk: the machine reference)"; timeout 90 $C --n 1000000 --m 1000000 --reps 5 --builder auto --k 8 --ops knn,closest,radius --traversal stack_free --quiet 2>&1 | grep -v "^kdforge 0\|^N \|^all" | cut -c1-105

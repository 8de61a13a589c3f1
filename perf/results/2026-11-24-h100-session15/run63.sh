#!/usr/bin/env bash
# session 15, run 63: k = 8 insertion variants (v1: chained C++ form, v2: chained PTX), SASS and same-run A/B
set -u
for t in base0 v1 v2; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/var/$t.xz && chmod +x .dev/var/$t || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
for t in base0 v1 v2; do
  cuobjdump -sass -fun '_ZN6Kokkos4Impl33cuda_parallel_launch_local_memoryINS0_11ParallelForIN7kdforge6detail16KnnSortedFunctorINS4_14FixedSplitTreeINS3_16LeftBalancedTreeINS_9CudaSpaceEfLi3EiEELNS3_11SplitPolicyE0EEENS_4ViewIPNS3_5PointIfLi3EEEJS8_EEENSC_IPiJS8_NS_12MemoryTraitsILj1EEEEEENS3_9KnnResultIS8_fiEELi8EEENS_11RangePolicyIJNS_4CudaEEEESP_EEEEvT_' .dev/var/$t > $OUT/$t.k8.sass 2>&1
  echo "$t: $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' $OUT/$t.k8.sass) instructions"
done
B="--n 1000000 --m 1000000 --builder partition --quiet --reps 10"
for r in 1 2 3; do for t in base0 v1 v2; do echo "== $t round $r"; .dev/var/$t $B --k 1,8,16 --ops knn,closest 2>&1 | grep -E "^1000000 |FAIL|rror|verified"; done; done

#!/bin/bash
R=$1
K=/root/.cache/kdforge/kokkos-3.4.1-f8ea97e9895f-Cuda-sm90
PATH=/usr/local/cuda/bin:$PATH $K/bin/nvcc_wrapper -DKOKKOS_DEPENDENCE -I$R/core/include -I$R/kernels/include -I$R/backends/include -I/work/main/build-cuda/include -isystem $K/include -O3 -DNDEBUG -expt-extended-lambda -arch=sm_90 -std=c++17 -Xptxas=-v -c /tmp/sim/regs.cpp -o /tmp/sim/regs-$$.o > /tmp/sim/regs-$$.log 2>&1
python3 /tmp/sim/regs.py /tmp/sim/regs-$$.log | sort | uniq | grep "pol 0" | grep "KnnSorted"

#!/usr/bin/env bash
# session 13, run 52: GPU tests after the review fix (split_dim written through split_dim_as)
set -u
python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" .dev/s35/kdforge_tests.xz && chmod +x .dev/s35/kdforge_tests || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
(timeout 450 .dev/s35/kdforge_tests --duration=true > $OUT/gpu_tests_run52.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests_run52.txt

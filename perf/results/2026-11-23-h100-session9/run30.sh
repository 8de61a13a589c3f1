#!/usr/bin/env bash
# session 9, run 30: GPU tests of the final code (s20: 1b review commit)
set -u
for f in .dev/s20/kdforge_tests.xz; do python3 -c "import lzma,sys; open(sys.argv[1][:-3],'wb').write(lzma.open(sys.argv[1]).read())" $f && chmod +x ${f%.xz} || exit 1; done
nvidia-smi --query-gpu=name --format=csv,noheader
(timeout 450 .dev/s20/kdforge_tests --duration=true > $OUT/gpu_tests.txt 2>&1; echo "tests rc $?"); tail -4 $OUT/gpu_tests.txt

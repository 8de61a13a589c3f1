# registers of the float D=3 round-robin KnnSorted kernels in `cuobjdump -res-usage` output (stdin)
import re, sys
lines = sys.stdin.read().split('\n')
for i, l in enumerate(lines):
    if 'KnnSortedFunctor' in l and 'EfLi3EiE' in l and 'SplitPolicyE0' in l:
        cap = re.findall(r'Li(\d+)EENS_11RangePolicy', l)
        col = 'closest' if 'ColumnResult' in l else 'knn'
        r = re.search(r'REG:(\d+)', lines[i + 1]) if i + 1 < len(lines) else None
        s = re.search(r'STACK:(\d+)', lines[i + 1]) if i + 1 < len(lines) else None
        print(col, 'CAP', cap[-1] if cap else '?', 'REG', r.group(1) if r else '?', 'STACK', s.group(1) if s else '?')

import re,sys
t=open(sys.argv[1]).read().split('\n')
for i,l in enumerate(t):
    m=re.search(r"Compiling entry function '(\S*(KnnSorted|KnnResume)Functor\S*)'",l)
    if m:
        name=m.group(1)
        pol=re.search(r'SplitPolicyE(\d)',name).group(1)
        cap=re.findall(r'Li(\d+)EEENS_11Range',name)
        res='Column' if 'ColumnResult' in name else 'Knn'
        for j in range(i,i+6):
            r=re.search(r'Used (\d+) registers',t[j])
            if r: print(m.group(2), 'pol',pol,'CAP',cap[-1] if cap else '?',res,'regs',r.group(1)); break

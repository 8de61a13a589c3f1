#!/usr/bin/env bash
# Copies this machine's Open MPI (Debian's openmpi-bin/libopenmpi3) into one
# folder that runs on another x86-64 Linux machine without Open MPI: mpirun
# (orterun) and orted, the MPI libraries, the MCA plugins, PMIx with its
# plugins, the help texts and the default parameters, and every shared
# library they load (found with ldd; the C library itself excepted, which
# every machine has). The network plugins Debian's defaults turn off
# (openib, ofi, ucx, psm) are left out: within one node ranks talk through
# shared memory (vader).
#
#   bash perf/mpi/bundle-openmpi.sh [folder [program...]]   (default folder: build-openmpi)
#   source <folder>/env.sh                          (OPAL_PREFIX, PATH, LD_LIBRARY_PATH, ...)
#   mpirun -np 4 <program>
#
# Programs named after the folder are copied into <folder>/programs (as
# <first folder of their path>-<name>: build-cuda-kdforge-mpi-bench), and the
# libraries they load join the others (libgomp of an OpenMP build, CUDA's
# runtime of a Cuda build; never the GPU driver's), so one folder carries
# everything a run needs.
#
# The folder may be moved: env.sh finds it from its own location.
set -euo pipefail

out=${1:-build-openmpi}
shift || true
programs=("$@")
for p in "${programs[@]}"; do [ -x "$p" ] || { echo "bundle-openmpi.sh: $p is not a program" >&2; exit 1; }; done
command -v orterun >/dev/null || { echo "bundle-openmpi.sh: Open MPI's orterun not found (apt-get install openmpi-bin)" >&2; exit 1; }
prefix=$(ompi_info --path prefix --parsable 2>/dev/null | sed -n 's/^path:prefix://p')
libdir=$(ompi_info --path libdir --parsable | sed -n 's/^path:libdir://p')
pkglibdir=$(ompi_info --path pkglibdir --parsable | sed -n 's/^path:pkglibdir://p')
pkgdatadir=$(ompi_info --path pkgdatadir --parsable | sed -n 's/^path:pkgdatadir://p')
sysconfdir=$(ompi_info --path sysconfdir --parsable | sed -n 's/^path:sysconfdir://p')
bindir=$(ompi_info --path bindir --parsable | sed -n 's/^path:bindir://p')
[ -n "$prefix" ] && [ -d "$pkglibdir" ] || { echo "bundle-openmpi.sh: cannot read Open MPI's paths from ompi_info" >&2; exit 1; }
case "$libdir" in "$prefix"/*) ;; *) echo "bundle-openmpi.sh: libdir $libdir is outside the prefix $prefix" >&2; exit 1 ;; esac
rel_lib=${libdir#"$prefix"/}
rel_pkglib=${pkglibdir#"$prefix"/}
rel_data=${pkgdatadir#"$prefix"/}

rm -rf "$out"
mkdir -p "$out/bin" "$out/$rel_lib" "$out/$rel_pkglib" "$out/lib/deps" "$out/etc/openmpi" "$out/$(dirname "$rel_data")"
cp -L "$bindir/orterun" "$bindir/orted" "$out/bin/"
ln -s orterun "$out/bin/mpirun"
ln -s orterun "$out/bin/mpiexec"
cp -L "$(command -v ompi_info)" "$out/bin/" 2>/dev/null || true
cp -r "$pkgdatadir" "$out/$rel_data"
[ -d "$sysconfdir" ] && cp "$sysconfdir"/*.conf "$out/etc/openmpi/" 2>/dev/null || true

# MCA plugins, without the fabrics' (and Java's, OpenSHMEM's)
skip='(openib|ofi|ucx|uct|psm|usnic|verbs|portals|java|spml|sshmem|scoll|memheap|atomic_)'
for f in "$pkglibdir"/*.so; do
  [[ $(basename "$f") =~ $skip ]] && continue
  cp -L "$f" "$out/$rel_pkglib/"
done
for f in "$libdir"/libmca_common_*.so*; do
  [[ $(basename "$f") =~ $skip ]] && continue
  cp -P "$f" "$out/$rel_lib/" 2>/dev/null || true
done

# PMIx (external in Debian's build): its library comes with the deps below,
# its plugins go to <out>/pmix (PMIX_INSTALL_PREFIX in env.sh)
pmix_lib=$(ldd "$(command -v orterun)" "$pkglibdir"/mca_pmix_*.so 2>/dev/null | awk '/libpmix\.so/ {print $3; exit}')
pmix_prefix=""
if [ -n "$pmix_lib" ]; then
  pmix_prefix=$(dirname "$(dirname "$(readlink -f "$pmix_lib")")")
  if [ -d "$pmix_prefix/lib/pmix" ]; then
    mkdir -p "$out/pmix/lib"
    cp -rL "$pmix_prefix/lib/pmix" "$out/pmix/lib/"
    [ -d "$pmix_prefix/share" ] && cp -rL "$pmix_prefix/share" "$out/pmix/"
  fi
fi

# every shared library the programs and plugins load, but the C library's
is_system() {
  case "$(basename "$1")" in
    libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libresolv.so.*|libutil.so.*|linux-vdso*) return 0 ;;
    libcuda.so*|libnvidia*) return 0 ;; # the GPU driver's: the target machine's own
  esac
  return 1
}
targets=("$out"/bin/orterun "$out"/bin/orted "$out/$rel_pkglib"/*.so)
[ -d "$out/pmix/lib/pmix" ] && targets+=("$out"/pmix/lib/pmix/*.so)
for t in "$libdir/libmpi.so"; do targets+=("$(readlink -f "$t")"); done
if [ ${#programs[@]} -gt 0 ]; then
  mkdir -p "$out/programs"
  for p in "${programs[@]}"; do
    # named after their build folder too: build-cuda/perf/mpi/x -> build-cuda-x
    name=$(basename "$p")
    case "$p" in */*) name="${p%%/*}-$name" ;; esac
    cp -L "$p" "$out/programs/$name"
    targets+=("$out/programs/$name")
  done
fi
# a Cuda build's CUDA runtime, where it is linked as a shared library
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do [ -d "$d" ] && cuda_libs="$cuda_libs:$d"; done
declare -A seen=()
queue=("${targets[@]}")
while [ ${#queue[@]} -gt 0 ]; do
  f=${queue[0]}
  queue=("${queue[@]:1}")
  while read -r name path; do
    [ -n "$path" ] && [ -f "$path" ] || continue
    is_system "$name" && continue
    [ -n "${seen[$name]:-}" ] && continue
    seen[$name]=1
    cp -L "$path" "$out/lib/deps/$name"
    queue+=("$path")
  done < <(LD_LIBRARY_PATH="$out/lib/deps:$cuda_libs" ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}')
done
# the GPU driver's libraries are the target machine's (none here without a GPU)
missing=$(for f in "${targets[@]}"; do LD_LIBRARY_PATH="$out/lib/deps:$out/$rel_lib" ldd "$f" 2>/dev/null | grep "not found" | grep -v -E "libcuda\.so|libnvidia" || true; done | sort -u)
[ -z "$missing" ] || { echo "bundle-openmpi.sh: unresolved libraries:" >&2; echo "$missing" >&2; exit 1; }

cat > "$out/env.sh" <<EOF
# Source me: this folder's Open MPI ($(orterun --version 2>&1 | head -n1)), wherever the folder lies.
_kdforge_ompi=\$(cd "\$(dirname "\${BASH_SOURCE[0]:-\$0}")" && pwd)
export OPAL_PREFIX=\$_kdforge_ompi
export OPAL_SYSCONFDIR=\$_kdforge_ompi/etc/openmpi
export OPAL_PKGDATADIR=\$_kdforge_ompi/$rel_data
export PMIX_INSTALL_PREFIX=\$_kdforge_ompi/pmix
export PATH=\$_kdforge_ompi/bin:\$PATH
export LD_LIBRARY_PATH=\$_kdforge_ompi/lib/deps:\$_kdforge_ompi/$rel_lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
# one node: shared memory between the ranks; mpirun as root (containers)
export OMPI_MCA_btl=\${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_pml=\${OMPI_MCA_pml:-ob1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset _kdforge_ompi
EOF
echo "$out: $(du -sh "$out" | cut -f1), Open MPI $(orterun --version 2>&1 | head -n1 | awk '{print $NF}'); use: source $out/env.sh"

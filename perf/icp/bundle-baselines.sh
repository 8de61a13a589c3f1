#!/usr/bin/env bash
# Packs kdforge-icp-bench built with Open3D and PCL (an OpenMP build with
# KDFORGE_ICP_BASELINES=ON, the default) together with the shared libraries
# it loads beyond the C library into one compressed archive, for a machine
# that lacks Open3D's and PCL's packages (a GPU host's CPU cores).
#
#   perf/icp/bundle-baselines.sh build-omp [kdforge-icp-baselines.tar.xz]
#
# and on the other machine (bash, tar and xz are all it needs):
#
#   mkdir -p /tmp/icpb && tar -xJf kdforge-icp-baselines.tar.xz -C /tmp/icpb
#   LD_LIBRARY_PATH=/tmp/icpb/kdforge-icp-baselines/lib /tmp/icpb/kdforge-icp-baselines/kdforge-icp-bench --open3d --pcl
#
# (or /tmp/icpb/kdforge-icp-baselines/run.sh ..., which sets the path; and
# run-own-libc.sh ..., which starts the program with the archive's own C
# library and loader, for a machine whose C library is older than the
# build machine's).
#
# Open3D's library is linked against ~100 others (rendering, GUI, file
# formats, BLAS, networking: ~200 MB) that its ICP never calls. Libraries
# named in STUB_PATTERNS below are not copied: each is replaced by a stub of
# the same name that defines only the symbols the copied objects take from
# it (functions print which one was called and abort; data are zeroed), so
# the dynamic loader is satisfied (Open3D is linked with BIND_NOW: every
# symbol must resolve at start). Everything else the program loads is
# copied, except the C library's own objects, which go to libc/ for
# run-own-libc.sh only. The script finishes by checking that ldd resolves
# every library from the archive's folders and by running a short frame
# sequence with both baselines from the unpacked archive.
set -euo pipefail

build=${1:?usage: bundle-baselines.sh BUILD_DIR [OUT.tar.xz]}
out=${2:-$PWD/kdforge-icp-baselines.tar.xz}
case $out in /*) ;; *) out=$PWD/$out ;; esac
bin=$build/perf/icp/kdforge-icp-bench
[ -x "$bin" ] || { echo "bundle-baselines: $bin not found (build the target kdforge-icp-bench)" >&2; exit 2; }
# (ldd's output read whole: with pipefail, grep -q closing the pipe early
# would fail the pipeline when ldd is still writing)
deps=$(ldd "$bin")
if ! grep -q libOpen3D <<<"$deps" || ! grep -q libpcl_common <<<"$deps"; then
  echo "bundle-baselines: $bin is not linked with Open3D and PCL (install libopen3d-dev and libpcl-dev, configure" \
       "with KDFORGE_ICP_BASELINES=ON and rebuild)" >&2
  exit 2
fi
for tool in nm readelf gcc xz ldd; do
  command -v $tool >/dev/null || { echo "bundle-baselines: $tool is needed" >&2; exit 2; }
done

# Libraries replaced by stubs: what Open3D links for rendering, GUI, file
# formats, linear algebra of its tensor library, networking and VTK
# interoperability. Its ICP (KDTreeFlann on nanoflann, Eigen, OpenMP,
# fmt for its log) and PCL's need none of them.
STUB_PATTERNS='^lib(vtk(Filters|CommonDataModel|CommonExecutionModel|CommonMisc|CommonTransforms|CommonMath|CommonSystem|CommonComputationalGeometry)|embree|assimp|draco|minizip|jpeg|jsoncpp|lzf|png|tinygltf|tinyobjloader|qhull|stb|zmq|GLEW|glfw|X11|filament|GLX|OpenGL|GL|curl|crypto|ssl|blas|lapack|openblas|gfortran|tmglib)'
# The C library's objects: every Linux machine has them (libc/ is only
# used by run-own-libc.sh).
LIBC_NAMES='(ld-linux[-.a-z0-9_]*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libmvec)\.so'
LIBC_PATTERNS="^$LIBC_NAMES"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/kdforge-icp-baselines
mkdir -p "$root/lib" "$root/libc" "$work/stubsrc"
cp "$bin" "$root/"

# name -> path of everything the program loads
declare -A path_of
while read -r name arrow path rest; do
  [ "$arrow" = "=>" ] && [ -f "$path" ] && path_of[$name]=$path
done < <(ldd "$bin")
loader=$(readelf -l "$bin" | sed -n 's/.*interpreter: \(.*\)]/\1/p')
path_of[$(basename "$loader")]=$loader

needed() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }

# Walk the NEEDED graph from the program: copy, stub or leave to libc/.
declare -A seen kind
queue=($(needed "$bin"))
kept_objects=("$root/kdforge-icp-bench")
while [ ${#queue[@]} -gt 0 ]; do
  name=${queue[0]}
  queue=("${queue[@]:1}")
  [ -n "${seen[$name]:-}" ] && continue
  seen[$name]=1
  p=${path_of[$name]:-}
  [ -n "$p" ] || { echo "bundle-baselines: ldd did not resolve $name" >&2; exit 1; }
  if [[ $name =~ $LIBC_PATTERNS ]]; then
    kind[$name]=libc
    cp -L "$p" "$root/libc/$name"
  elif [[ $name =~ $STUB_PATTERNS ]]; then
    kind[$name]=stub
  else
    kind[$name]=copy
    cp -L "$p" "$root/lib/$name"
    kept_objects+=("$root/lib/$name")
    queue+=($(needed "$p"))
  fi
done

# What the copied objects take from each stubbed library (name@version,
# weak references left out: they may stay unresolved).
for o in "${kept_objects[@]}"; do nm -D --undefined-only "$o" | awk '$1 == "U" {print $2}'; done | sort -u \
  > "$work/undefined.txt"
stubbed=0
for name in "${!kind[@]}"; do
  [ "${kind[$name]}" = stub ] || continue
  p=${path_of[$name]}
  python3 - "$p" "$name" "$work/undefined.txt" "$work/stubsrc/$name" <<'PY'
import subprocess, sys, collections
lib, soname, undefined_file, base = sys.argv[1:5]
wanted = set(open(undefined_file).read().split())
# nm -D -S --defined-only: [value] [size] type name[@[@]version]
out = subprocess.run(["nm", "-D", "-S", "--defined-only", lib], capture_output=True, text=True, check=True).stdout
defs = {}
for line in out.splitlines():
    f = line.split()
    if len(f) == 4: _, size, t, sym = f
    elif len(f) == 3: _, t, sym = f; size = "0"
    else: continue
    name, _, version = sym.partition("@")
    version = version.lstrip("@")
    defs[(name, version)] = (t, int(size, 16))
funcs, objs, versions = [], [], collections.defaultdict(list)
for ref in sorted(wanted):
    name, _, version = ref.partition("@")
    key = (name, version)
    if key not in defs:
        if version: continue
        # an unversioned reference binds to the default version
        match = [k for k in defs if k[0] == name]
        if not match: continue
        key = match[0]
    t, size = defs[key]
    if t in "TtWiI": funcs.append(key[0])
    elif t in "DdBbRrVvGgSsu": objs.append((key[0], max(size, 8)))
    else: continue
    versions[key[1]].append(key[0])
with open(base + ".c", "w") as c:
    c.write('#include <stdlib.h>\n#include <string.h>\n#include <unistd.h>\n')
    c.write('static void called(const char* s) {\n'
            '  static const char m[] = "kdforge-icp-bench bundle: a function of a library left out of the bundle was called: ";\n'
            '  (void)!write(2, m, sizeof m - 1); (void)!write(2, s, strlen(s)); (void)!write(2, "\\n", 1); abort();\n}\n')
    for i, f in enumerate(funcs):
        c.write(f'void f{i}(void) __asm__("{f}");\nvoid f{i}(void) {{ called("{soname}: {f}"); }}\n')
    for i, (o, size) in enumerate(objs):
        c.write(f'__attribute__((aligned(16))) char d{i}[{size}] __asm__("{o}");\n')
with open(base + ".map", "w") as m:
    for v, names in versions.items():
        if not v: continue
        m.write(v + " {\n  global:\n" + "".join(f"    {n};\n" for n in names) + "};\n")
    m.write("{\n  global:\n" + "".join(f"    {n};\n" for n in versions.get("", [])) + "  local: *;\n};\n"
            if versions.get("") else "")
print(f"{soname}: stub of {len(funcs)} functions, {len(objs)} data")
PY
  map=()
  [ -s "$work/stubsrc/$name.map" ] && map=(-Wl,--version-script="$work/stubsrc/$name.map")
  gcc -shared -fPIC -O1 -o "$root/lib/$name" "$work/stubsrc/$name.c" -Wl,-soname,"$name" "${map[@]}"
  stubbed=$((stubbed + 1))
done

cat > "$root/run.sh" <<'EOF'
#!/usr/bin/env bash
# kdforge-icp-bench with the archive's libraries (the machine's C library)
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec "$here/kdforge-icp-bench" "$@"
EOF
cat > "$root/run-own-libc.sh" <<EOF
#!/usr/bin/env bash
# kdforge-icp-bench with the archive's libraries and its own C library and
# loader (for a machine whose C library is older than the build machine's)
here=\$(cd "\$(dirname "\${BASH_SOURCE[0]}")" && pwd)
exec "\$here/libc/$(basename "$loader")" --library-path "\$here/lib:\$here/libc" "\$here/kdforge-icp-bench" "\$@"
EOF
chmod +x "$root/run.sh" "$root/run-own-libc.sh"
glibc=$(for o in "${kept_objects[@]}"; do objdump -T "$o" 2>/dev/null; done | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
{
  echo "kdforge-icp-bench with Open3D and PCL, packed by perf/icp/bundle-baselines.sh on $(date -u +%Y-%m-%d)"
  echo "needs a C library with $glibc or newer for run.sh (run-own-libc.sh brings its own)"
  for k in copy stub; do
    echo "$k:"
    for n in "${!kind[@]}"; do if [ "${kind[$n]}" = $k ]; then echo "  $n"; fi; done | sort
  done
} > "$root/MANIFEST"

# Every library resolves from the archive (the C library's from the machine).
missing=$(LD_LIBRARY_PATH=$root/lib ldd "$root/kdforge-icp-bench" | awk -v lib="$root/lib/" -v libc="$LIBC_PATTERNS" '
  /=>/ { n = $1; p = $3; if (p == "not") { print n " not found"; next }
         if (index(p, lib) != 1 && n !~ libc) print n " from " p }')
if [ -n "$missing" ]; then
  echo "bundle-baselines: not resolved from the archive:" >&2
  echo "$missing" >&2
  exit 1
fi

tar -C "$work" -cf - kdforge-icp-baselines | xz -9e -T2 > "$out"
raw=$(du -sb "$root" | cut -f1)
echo "bundle-baselines: $out: $(stat -c %s "$out") bytes ($((raw / 1048576)) MiB unpacked; $stubbed libraries stubbed; $glibc)"

# A short run from the unpacked archive, with both baselines; the loader's
# log shows where every object it initialised came from (dlopen included):
# the archive, or the C library.
check=$work/check
mkdir -p "$check"
tar -xJf "$out" -C "$check"
if ! LD_DEBUG=libs LD_DEBUG_OUTPUT=$work/loader LD_LIBRARY_PATH=$check/kdforge-icp-baselines/lib \
     "$check/kdforge-icp-baselines/kdforge-icp-bench" --frames 2 \
     --resolution 160x120 --model-points 3000 --open3d --pcl > "$work/run.txt" 2>&1 \
     < /dev/null || ! grep -q "^Open3D" "$work/run.txt" || ! grep -q "^PCL" "$work/run.txt"; then
  cat "$work/run.txt" >&2
  echo "bundle-baselines: the unpacked archive does not run" >&2
  exit 1
fi
outside=$(cat "$work"/loader.* | sed -n 's/.*calling init: //p' | sort -u |
          grep -v "^$check/kdforge-icp-baselines/lib/" | grep -Ev "/$LIBC_NAMES" || true)
if [ -n "$outside" ]; then
  echo "bundle-baselines: the unpacked program loaded objects from outside the archive:" >&2
  echo "$outside" >&2
  exit 1
fi
echo "bundle-baselines: the unpacked archive runs (2 frames, Open3D and PCL), every library from the archive"

#!/usr/bin/env bash
# Obtain, patch, build and cache Kokkos for one kdforge backend: Debian's
# Kokkos 3.4.1 by default, or a Kokkos source release tarball.
#
# Usage: kokkos-bootstrap.sh BACKEND [CUDA_ARCH]
#   BACKEND   Serial | OpenMP | Threads | Cuda
#   CUDA_ARCH compute capability without the dot (default 90, Hopper)
# Prints the install prefix as the last line of stdout (CMake reads it).
#
# KDFORGE_KOKKOS_TARBALL=<path to kokkos-X.Y.ZZ.tar.gz> builds that release
# instead (kdforge's tests against a current Kokkos use the 4.6.01 release);
# its patches, if any, are in cmake/patches/kokkos-X.Y.ZZ.
#
# Why this exists: Debian ships only a Serial-only binary Kokkos
# (libtrilinos-kokkos-dev), so we build Kokkos from Debian's trilinos *source*
# package (packages/kokkos is Kokkos 3.4.1), with the patch set in
# cmake/patches/kokkos-3.4.1 that makes it work with CUDA 13 and Hopper.
#
# The install is cached outside the source tree, keyed by Kokkos version, the
# hash of the patch set and the backend (+arch), so later configures reuse it:
#   ${KDFORGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kdforge}/kokkos-3.4.1-<hash>-<backend>
#
# Where the sources come from: $KDFORGE_KOKKOS_SOURCE_DIR if set (an unpacked
# Kokkos source tree), else `apt-get source --download-only trilinos` with a
# deb-src entry derived from this machine's own Debian "deb" entries, in a
# private apt state directory (nothing under /etc is modified).
set -euo pipefail

backend=${1:?usage: kokkos-bootstrap.sh Serial|OpenMP|Threads|Cuda [cuda_arch]}
arch=${2:-90}
kokkos_version=3.4.1
release_tarball=${KDFORGE_KOKKOS_TARBALL:-}
if [ -n "$release_tarball" ]; then
  [ -f "$release_tarball" ] || { echo "[kdforge kokkos-bootstrap] error: KDFORGE_KOKKOS_TARBALL=$release_tarball does not exist" >&2; exit 1; }
  kokkos_version=$(basename "$release_tarball" | sed -n 's/^kokkos-\([0-9][0-9.]*[0-9]\)\.tar\..*$/\1/p')
  [ -n "$kokkos_version" ] || { echo "[kdforge kokkos-bootstrap] error: cannot read a version from $(basename "$release_tarball") (expected kokkos-X.Y.ZZ.tar.gz)" >&2; exit 1; }
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
patch_dir="$here/patches/kokkos-$kokkos_version"
cache=${KDFORGE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kdforge}
jobs=${KDFORGE_BUILD_JOBS:-$(nproc 2>/dev/null || echo 2)}

log() { echo "[kdforge kokkos-bootstrap] $*" >&2; }
die() { log "error: $*"; exit 1; }

case "$backend" in
  Serial)  opts=(-DKokkos_ENABLE_SERIAL=ON) ;;
  OpenMP)  opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_OPENMP=ON) ;;
  Threads) # Kokkos 3.x spells it PTHREAD, 4.x THREADS
    case "$kokkos_version" in 3.*) opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_PTHREAD=ON) ;;
                              *) opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_THREADS=ON) ;; esac ;;
  Cuda)
    case "$arch" in
      90) karch=HOPPER90 ;; 89) karch=ADA89 ;; 86) karch=AMPERE86 ;; 80) karch=AMPERE80 ;;
      75) karch=TURING75 ;; 70) karch=VOLTA70 ;;
      *) die "unsupported CUDA arch '$arch' (supported: 70 75 80 86 89 90)" ;;
    esac
    opts=(-DKokkos_ENABLE_SERIAL=ON -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_CUDA_LAMBDA=ON
          "-DKokkos_ARCH_${karch}=ON") ;;
  *) die "unknown backend '$backend' (expected Serial, OpenMP, Threads or Cuda)" ;;
esac

patches=()
if [ -d "$patch_dir" ]; then
  while IFS= read -r p; do patches+=("$p"); done < <(find "$patch_dir" -name '*.patch' | LC_ALL=C sort)
fi
patch_hash=$( { echo "$kokkos_version"; for p in "${patches[@]}"; do cat "$p"; done; } | sha256sum | cut -c1-12)
key="kokkos-$kokkos_version-$patch_hash-$backend"
[ "$backend" = Cuda ] && key="$key-sm$arch"
prefix="$cache/$key"

if [ -f "$prefix/.kdforge-complete" ]; then
  log "reusing cached Kokkos at $prefix"
  echo "$prefix"; exit 0
fi

mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9 2>/dev/null || true
if [ -f "$prefix/.kdforge-complete" ]; then echo "$prefix"; exit 0; fi

# --- 1. sources -------------------------------------------------------------
src_root="$cache/src"
mkdir -p "$src_root"
if [ -n "$release_tarball" ]; then
  pristine="$src_root/kokkos-$kokkos_version-pristine"
  if [ ! -f "$pristine/CMakeLists.txt" ]; then
    log "extracting $(basename "$release_tarball")"
    tmp="$src_root/extract.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
    tar -xf "$release_tarball" -C "$tmp"
    kdir=$(find "$tmp" -maxdepth 2 -name CMakeLists.txt -printf '%h\n' | head -n1)
    [ -n "$kdir" ] || die "no Kokkos source tree in $release_tarball"
    rm -rf "$pristine"; mv "$kdir" "$pristine"; rm -rf "$tmp"
  fi
elif [ -n "${KDFORGE_KOKKOS_SOURCE_DIR:-}" ]; then
  pristine="$KDFORGE_KOKKOS_SOURCE_DIR"
  [ -f "$pristine/CMakeLists.txt" ] || die "KDFORGE_KOKKOS_SOURCE_DIR=$pristine is not a Kokkos source tree"
else
  pristine="$src_root/kokkos-$kokkos_version-pristine"
  if [ ! -f "$pristine/CMakeLists.txt" ]; then
    tarball=$(ls "$src_root"/trilinos_*.orig.tar.* 2>/dev/null | head -n1 || true)
    if [ -z "$tarball" ]; then
      command -v apt-get >/dev/null || die "apt-get not found: set KDFORGE_KOKKOS_SOURCE_DIR to a Kokkos $kokkos_version source tree, or pass -DKokkos_ROOT=<an installed Kokkos>"
      apt_dir="$src_root/apt"
      rm -rf "$apt_dir"; mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
      # Derive deb-src entries from the machine's own Debian entries, so no
      # mirror is named anywhere in this project.
      n=0
      for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        sed -e 's/^Types:.*\bdeb\b.*$/Types: deb-src/' "$f" > "$apt_dir/parts/src$n.sources"; n=$((n+1))
      done
      for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n -e 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" > "$apt_dir/parts/src$n.list"; n=$((n+1))
      done
      [ "$n" -gt 0 ] || die "no Debian apt sources found in /etc/apt to derive a deb-src entry from"
      apt_opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt_dir/parts"
                -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache"
                -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
      log "fetching the trilinos source package index (deb-src derived from /etc/apt)"
      apt-get "${apt_opts[@]}" update >&2 || log "warning: apt-get update reported errors; trying anyway"
      log "downloading Debian's trilinos source package (~160 MB, once)"
      (cd "$src_root" && apt-get "${apt_opts[@]}" source --download-only trilinos >&2) \
        || die "apt-get source trilinos failed (network? deb-src?): set KDFORGE_KOKKOS_SOURCE_DIR or -DKokkos_ROOT instead"
      tarball=$(ls "$src_root"/trilinos_*.orig.tar.* | head -n1)
    fi
    log "extracting packages/kokkos from $(basename "$tarball")"
    tmp="$src_root/extract.$$"; rm -rf "$tmp"; mkdir -p "$tmp"
    tar -xf "$tarball" -C "$tmp" --wildcards '*/packages/kokkos/*'
    kdir=$(find "$tmp" -maxdepth 3 -type d -path '*/packages/kokkos' | head -n1)
    [ -n "$kdir" ] || die "packages/kokkos not found in $tarball"
    grep -q "set(Kokkos_VERSION_MINOR 4)" "$kdir/CMakeLists.txt" || die "the trilinos source does not contain Kokkos $kokkos_version"
    rm -rf "$pristine"; mv "$kdir" "$pristine"; rm -rf "$tmp"
  fi
fi

# --- 2. patch ---------------------------------------------------------------
work="$src_root/$key"
rm -rf "$work"; cp -a "$pristine" "$work"
for p in "${patches[@]}"; do
  log "applying $(basename "$p")"
  patch -d "$work" -p1 --forward --silent < "$p" >&2 || die "patch $(basename "$p") does not apply"
done

# --- 3. build + install -----------------------------------------------------
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cxx=()
[ "$backend" = Cuda ] && cxx=(-DCMAKE_CXX_COMPILER="$work/bin/nvcc_wrapper")
build="$work-build"
rm -rf "$build" "$prefix"
log "building Kokkos $kokkos_version for $backend with $jobs jobs (a few minutes, once)"
cmake -S "$work" -B "$build" "${gen[@]}" "${cxx[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=17 \
      -DCMAKE_CXX_EXTENSIONS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DKokkos_ENABLE_TESTS=OFF \
      -DCMAKE_INSTALL_PREFIX="$prefix" "${opts[@]}" >&2
cmake --build "$build" --parallel "$jobs" >&2
cmake --install "$build" >&2
rm -rf "$build" "$work"
touch "$prefix/.kdforge-complete"
log "installed Kokkos $kokkos_version ($backend) to $prefix"
echo "$prefix"

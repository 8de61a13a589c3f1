#!/usr/bin/env bash
# Checks tests/compute-sanitizer.sh without a GPU: a stand-in test binary
# (doctest's listing and summaries) and a stand-in compute-sanitizer that
# runs it. The script must order the slow case first, turn commas into '?',
# report a failing case and a case the filter does not match, exit 1 then,
# with --resume run only the jobs that did not pass, and with --cases only
# the cases named.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/build/tests" "$tmp/bin"
fail() { echo "compute-sanitizer-selftest: $*" >&2; exit 1; }

cat > "$tmp/build/tests/kdforge_tests_fake" <<'EOF'
#!/usr/bin/env bash
if [ "$1" = --list-test-cases ]; then
  bar=$(printf '=%.0s' {1..79})
  printf '[doctest] doctest version is "2.4.9"\n%s\n[doctest] listing all test case names\n%s\n' "$bar" "$bar"
  printf 'quick, with a comma<Kokkos::Cuda>\nevery distribution, builder and query kind equals brute force<Kokkos::Cuda>\n'
  printf 'fails here<Kokkos::Cuda>\nrenamed<Kokkos::Cuda>\n%s\n[doctest] unskipped test cases passed: 4\n' "$bar"
  exit 0
fi
echo "ran: $*"
case "$1" in
  *fails*) echo "[doctest] test cases:    1 |    0 passed | 1 failed"; exit 1 ;;
  *renamed*) echo "[doctest] test cases:    0 |    0 passed | 0 failed"; exit 0 ;;
  *'with a comma'*) [ "$1" = '--test-case=quick? with a comma<Kokkos::Cuda>' ] || exit 5 ;;
esac
echo "[doctest] test cases:    1 |    1 passed | 0 failed"
EOF
cat > "$tmp/bin/compute-sanitizer" <<'EOF'
#!/usr/bin/env bash
args=()
while [ $# -gt 0 ]; do
  case "$1" in --tool|--error-exitcode|--print-limit|--racecheck-report|--kernel-name-exclude) shift 2 ;;
    *) args+=("$1"); shift ;; esac
done
echo "device: $CUDA_VISIBLE_DEVICES"
rc=0; "${args[@]}" || rc=$?
echo "========= ERROR SUMMARY: 0 errors"
exit $rc
EOF
chmod +x "$tmp/build/tests/kdforge_tests_fake" "$tmp/bin/compute-sanitizer"
export PATH="$tmp/bin:$PATH"
cs() { bash "$here/compute-sanitizer.sh" --gpus 2 --per-gpu 2 --out "$tmp/out" "$@" "$tmp/build"; }

listing=$(cs --dry-run --tools "memcheck racecheck")
order=$(sed -n 1,2p <<< "$listing" | cut -f1,3)
[ "$order" = "$(printf 'racecheck\tevery distribution, builder and query kind equals brute force<Kokkos::Cuda>\nmemcheck\tevery distribution, builder and query kind equals brute force<Kokkos::Cuda>')" ] ||
  fail "the slow case does not start first: $order"

rc=0; out=$(cs --tools "memcheck racecheck") || rc=$?
[ $rc = 1 ] || fail "exit $rc with a failing case (expected 1)"
[ "$(wc -l < "$tmp/out/summary.tsv")" = 8 ] || fail "summary.tsv has $(wc -l < "$tmp/out/summary.tsv") lines (expected 8)"
for t in memcheck racecheck; do
  grep -q "^  $t fake exit 1: fails here" <<< "$out" || fail "the failing case under $t is not reported"
  grep -q "^  $t fake exit 3: renamed" <<< "$out" || fail "the case that did not run under $t is not reported"
  awk -F'\t' -v t=$t '$1 == t && $7 ~ /with a comma/ && $3 == 0 {ok=1} END {exit !ok}' "$tmp/out/summary.tsv" ||
    fail "the case with a comma did not pass under $t (its filter must have '?' for the comma)"
done

rc=0; out=$(cs --tools "memcheck racecheck" --resume) || rc=$?
[ $rc = 1 ] || fail "exit $rc on --resume with a failing case (expected 1)"
grep -q "4 jobs on" <<< "$out" || fail "--resume did not run only the 4 jobs that failed: $out"
[ "$(wc -l < "$tmp/out/summary.tsv")" = 8 ] || fail "--resume left $(wc -l < "$tmp/out/summary.tsv") lines (expected 8)"

listing=$(cs --dry-run --tools initcheck --cases 'comma|fails')
[ "$(cut -f3 <<< "$listing" | sed '$d')" = "$(printf 'quick, with a comma<Kokkos::Cuda>\nfails here<Kokkos::Cuda>')" ] ||
  fail "--cases 'comma|fails' does not list exactly those two cases: $listing"
rc=0; cs --dry-run --cases 'no such case' > /dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "--cases matching no case exits $rc (expected 2)"

rm -rf "$tmp/out"
bash "$here/compute-sanitizer.sh" --gpus 1,3 --per-gpu 1 --out "$tmp/out" --tools memcheck --cases 'quick|every' "$tmp/build" > /dev/null ||
  fail "--gpus 1,3 with two passing cases failed"
devices=$(cat "$tmp/out"/*.log | sed -n 's/^device: //p' | sort -u | tr '\n' ' ')
case "$devices" in "1 " | "3 " | "1 3 ") ;; *) false ;; esac || fail "--gpus 1,3 ran on device(s) '$devices'"
for g in 0 1,x ,1; do
  rc=0; cs --gpus "$g" > /dev/null 2>&1 || rc=$?
  [ $rc = 2 ] || fail "--gpus '$g' exits $rc (expected 2)"
done

rc=0; cs --tools bogus > /dev/null 2>&1 || rc=$?
[ $rc = 2 ] || fail "an unknown tool exits $rc (expected 2)"
echo "compute-sanitizer-selftest: ok"

#!/bin/bash
# testsuite/run-upstream.sh SRC MODE: upstream OCaml 5.3.0's runtime test
# directories, run with upstream's ocamltest in the built tree SRC.
#   MODE plain:  as upstream runs them.
#   MODE traced: with OCAMLRUNPARAM=memprof=...%p... exported for every
#                process of the run (compilers, ocamltest, test programs);
#                afterwards every trace written must decode without error.
# Results must equal testsuite/upstream-baseline.txt, measured on vanilla
# 5.3.0 on this platform.  Last line: "N passed, N failed" (tests).
set -u
SRC=$1; MODE=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
W=${TEST_WORKDIR:-$top/_build/tests}/upstream-$MODE
rm -rf "$W"; mkdir -p "$W/traces"
DIRS="tests/statmemprof tests/gc-roots tests/compaction tests/parallel
  tests/lib-runtime-events tests/weak-ephe-final tests/lib-systhreads"
printf '%s\n' $DIRS > "$W/list"
unset OCAMLRUNPARAM CAMLRUNPARAM
if [ "$MODE" = traced ]; then
  export OCAMLRUNPARAM="memprof=$W/traces/t-%p.trace,memprof_rate=1e-4"
fi
make -C "$SRC/testsuite" one LIST="$W/list" > "$W/log" 2>&1
unset OCAMLRUNPARAM
num() { awk -v w="$1" '$2 == "tests" && $3 == w { print $1; exit }' "$W/log"; }
p=$(num passed); s=$(num skipped); f=$(num failed); u=$(num "unexpected")
p=${p:-0}; s=${s:-0}; f=${f:-0}; u=${u:-0}
echo "upstream ($MODE): $p passed, $s skipped, $f failed, $u unexpected errors"
fails=$((f + u))
base=$(cat "$here/upstream-baseline.txt" 2>/dev/null)
if [ "$p passed, $s skipped" != "$base" ]; then
  echo "FAIL upstream ($MODE): expected '$base' as on vanilla 5.3.0"
  grep -E "=> failed|=> unexpected" "$W/log" | head -n 20
  [ $fails -gt 0 ] || fails=1
fi
if [ "$MODE" = traced ]; then
  n=0; bad=0
  for t in "$W"/traces/*.trace; do
    [ -e "$t" ] || continue
    n=$((n + 1))
    "$top/_build/tests/trace_summary" "$t" > "$W/sum" 2>&1 ||
      { bad=$((bad + 1)); echo "FAIL trace $t: $(grep '^error' "$W/sum")"; }
  done
  echo "upstream (traced): $n trace files written, $bad failed to decode"
  [ "$n" -gt 100 ] || { echo "FAIL upstream (traced): too few traces ($n): was tracing on?"; bad=$((bad + 1)); }
  p=$((p + n - bad)); fails=$((fails + bad))
fi
echo "$p passed, $fails failed"
[ "$fails" -eq 0 ]

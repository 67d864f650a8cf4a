#!/bin/bash
# testsuite/run-all.sh PREFIX SRC: every suite `make test` runs, each ending
# with "N passed, N failed"; the last line sums them.
set -u
PREFIX=$1; SRC=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
BUILD=${MEMPROF_BUILD_DIR:-$top/_build}   # the version's build directory (Makefile)
log=$BUILD/test-logs; mkdir -p "$log"
tp=0; tf=0
# MEMPROF_SUITES="build tracer ..." runs only the suites named (CI's share
# on the second version, see build-aux/test-versions.sh); unset: all.
wanted() { [ -z "${MEMPROF_SUITES:-}" ] || case " $MEMPROF_SUITES " in *" $1 "*) true;; *) false;; esac; }
suite() { # NAME COMMAND...
  local name=$1; shift
  wanted "$name" || { echo "== $name: not run (MEMPROF_SUITES=$MEMPROF_SUITES)"; return; }
  echo "== $name"
  "$@" 2>&1 | tee "$log/$name.log" | grep -E '^(FAIL|ok |upstream|codec_test|[0-9]+ passed)' | grep -v '^ok ' 
  local last p f
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$name.log" | tail -n 1)
  p=$(echo "$last" | awk '{ print $1 }'); f=$(echo "$last" | awk '{ print $3 }')
  [ -n "$last" ] || { p=0; f=1; echo "$name: no result line (see $log/$name.log)"; }
  tp=$((tp + p)); tf=$((tf + f))
}
suite build "$here/build-tests.sh" "$PREFIX"
suite tracer "$here/run.sh" "$PREFIX"
suite snapshots "$here/snapshots.sh" "$PREFIX"
# Real Lwt 5.6.1 programs; Lwt's sources are fetched once (about 3 minutes
# then, 40 s after); skipped without network and cache.
suite lwt "$here/lwt.sh" "$PREFIX"
suite tools make -s -C "$top/tools" check PREFIX="$PREFIX"
suite fuzz make -s -C "$top/tools" fuzz-smoke
suite upstream-plain "$here/run-upstream.sh" "$SRC" plain
suite upstream-traced "$here/run-upstream.sh" "$SRC" traced
# The opam switch, built from `make dist` with no network (about 12 min).
if command -v opam > /dev/null && [ "${MEMPROF_SKIP_OPAM:-}" != 1 ] && wanted opam; then
  echo "== opam"
  if make -s -C "$top" opam-test > "$log/opam.log" 2>&1; then
    tp=$((tp + 1)); echo "ok   opam switch: $(tail -n 1 "$log/opam.log")"
  else
    tf=$((tf + 1)); echo "FAIL opam switch:"; tail -n 20 "$log/opam.log"
  fi
fi
echo "$tp passed, $tf failed"
[ "$tf" -eq 0 ]

#!/bin/bash
# testsuite/run-all.sh PREFIX SRC: every suite `make test` runs, each ending
# with "N passed, N failed"; the last line sums them.
set -u
PREFIX=$1; SRC=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
log=$top/_build/test-logs; mkdir -p "$log"
tp=0; tf=0
suite() { # NAME COMMAND...
  local name=$1; shift
  echo "== $name"
  "$@" 2>&1 | tee "$log/$name.log" | grep -E '^(FAIL|ok |upstream|codec_test|[0-9]+ passed)' | grep -v '^ok ' 
  local last p f
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/$name.log" | tail -n 1)
  p=$(echo "$last" | awk '{ print $1 }'); f=$(echo "$last" | awk '{ print $3 }')
  [ -n "$last" ] || { p=0; f=1; echo "$name: no result line (see $log/$name.log)"; }
  tp=$((tp + p)); tf=$((tf + f))
}
suite tracer "$here/run.sh" "$PREFIX"
suite tools make -s -C "$top/tools" check PREFIX="$PREFIX"
suite fuzz make -s -C "$top/tools" fuzz-smoke
suite upstream-plain "$here/run-upstream.sh" "$SRC" plain
suite upstream-traced "$here/run-upstream.sh" "$SRC" traced
echo "$tp passed, $tf failed"
[ "$tf" -eq 0 ]

#!/bin/bash
# build-aux/test-versions.sh: README's test command for both versions, what
# CI (.ci/run) runs.  Builds and tests each version in its own build
# directory and prefix:
#   5.3.0 (the default)  the whole suite (`make test`);
#   5.4.1                the whole suite except the opam switch test
#                        (MEMPROF_SKIP_OPAM=1), to stay within CI's 90
#                        minutes; `make OCAML_VERSION=5.4.1 test` runs it all.
# MEMPROF_FULL_BOTH=1 runs the whole suite on both.  Each version's result
# line is kept; the last line sums them: "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
log=$top/_build-logs; mkdir -p "$log"
tp=0; tf=0
for v in 5.3.0 5.4.1; do
  skip=
  [ "$v" = 5.4.1 ] && [ "${MEMPROF_FULL_BOTH:-}" != 1 ] && skip=1
  echo "==== OCaml $v+memprof${skip:+ (without the opam switch test)}"
  start=$(date +%s)
  MEMPROF_SKIP_OPAM=${skip:-${MEMPROF_SKIP_OPAM:-}} make -C "$top" OCAML_VERSION=$v test 2>&1 | tee "$log/test-$v.log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/test-$v.log" | tail -n 1)
  p=$(echo "$last" | awk '{ print $1 }'); f=$(echo "$last" | awk '{ print $3 }')
  [ -n "$last" ] || { p=0; f=1; echo "OCaml $v: no result line (build failed? see $log/test-$v.log)"; }
  echo "==== OCaml $v+memprof: $p passed, $f failed in $(( $(date +%s) - start )) s"
  tp=$((tp + p)); tf=$((tf + f))
done
echo "$tp passed, $tf failed"
[ "$tf" -eq 0 ]

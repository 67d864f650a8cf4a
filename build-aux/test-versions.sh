#!/bin/bash
# build-aux/test-versions.sh: README's test command for both versions, what
# CI (.ci/run) runs.  Builds and tests each version in its own build
# directory and prefix:
#   5.3.0 (the default)  the whole suite (`make test`);
#   5.4.1                its build, the build, tracer and snapshot tests
#                        (MEMPROF_SUITES="build tracer snapshots"): the
#                        suites that depend on the version's runtime and
#                        take minutes.
# The tools, fuzzing and the opam switch test are version-independent or
# long; the upstream runtime test directories (plain and traced against
# vanilla 5.4.1's baseline) take about 25 minutes more per version, which
# CI's 90 minutes do not hold for both versions (measured: the whole suite
# on 5.3.0 took 91 minutes on this 2-core machine under load, about 50
# idle).  MEMPROF_FULL_BOTH=1 runs the whole suite on both;
# `make OCAML_VERSION=5.4.1 test` runs it on 5.4.1 alone.  Each version's
# result line is kept; the last line sums them: "N passed, N failed".
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
log=$top/_build-logs; mkdir -p "$log"
tp=0; tf=0
for v in 5.3.0 5.4.1; do
  suites=
  [ "$v" = 5.4.1 ] && [ "${MEMPROF_FULL_BOTH:-}" != 1 ] && suites="build tracer snapshots"
  echo "==== OCaml $v+memprof${suites:+ (suites: $suites)}"
  start=$(date +%s)
  MEMPROF_SUITES=$suites make -C "$top" OCAML_VERSION=$v test 2>&1 | tee "$log/test-$v.log"
  last=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log/test-$v.log" | tail -n 1)
  p=$(echo "$last" | awk '{ print $1 }'); f=$(echo "$last" | awk '{ print $3 }')
  [ -n "$last" ] || { p=0; f=1; echo "OCaml $v: no result line (build failed? see $log/test-$v.log)"; }
  echo "==== OCaml $v+memprof: $p passed, $f failed in $(( $(date +%s) - start )) s"
  tp=$((tp + p)); tf=$((tf + f))
done
echo "$tp passed, $tf failed"
[ "$tf" -eq 0 ]

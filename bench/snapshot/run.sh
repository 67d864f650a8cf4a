#!/bin/bash
# bench/snapshot/run.sh PREFIX [MILLIONS]: heap snapshot at scale.  Builds
# bigheap.ml with PREFIX's ocamlopt, takes one snapshot of MILLIONS (default
# 16) million list cells + records (2 blocks each, 64 bytes), and reports:
# the pause (from the trace's END record), bytes written per block, the
# snapshot call's wall time, and `ocaml-memprof retainers` time and peak
# memory (GNU time).  Results: bench/snapshot/results.md (by hand).
set -eu
PREFIX=$(cd "$1" && pwd); M=${2:-16}
here=$(cd "$(dirname "$0")" && pwd)
W=${BENCH_WORKDIR:-/tmp/memprof-snapshot-bench}
mkdir -p "$W"; cd "$W"
"$PREFIX/bin/ocamlopt" -O2 -I +unix unix.cmxa -o bigheap "$here/bigheap.ml" 2>/dev/null \
  || "$PREFIX/bin/ocamlopt" -I +unix unix.cmxa -o bigheap "$here/bigheap.ml"
rm -f big.trace
/usr/bin/time -f "program: %e s wall, %M kB max RSS" env \
  OCAMLRUNPARAM="memprof=$W/big.trace,memprof_rate=0" ./bigheap "$M"
ls -l big.trace | awk '{ print "trace:", $5, "bytes" }'
/usr/bin/time -f "retainers: %e s wall, %M kB max RSS" \
  "$PREFIX/bin/ocaml-memprof" retainers -n 5 big.trace | head -12
"$PREFIX/bin/ocaml-memprof" retainers big.trace | awk -v size="$(stat -c %s big.trace)" '
  /^heap snapshot/ { for (i = 1; i <= NF; i++) { if ($i == "blocks,") b = $(i - 1); if ($i == "edges") e = $(i - 1) }
    printf "bytes per block (whole file, LZ4): %.2f; per block+edge: %.2f\n", size / b, size / (b + e) }'

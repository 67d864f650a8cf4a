#!/bin/sh
# bench.sh: decode+aggregate throughput of ocaml-memprof (`make -C tools bench`).
# Generates two large synthetic traces (5.3.0+memprof format through the
# codec, and memtrace CTF) and, when the patched compiler is installed
# (../_install/bin), a real runtime trace of tests/leaky.ml at rate 0.1 (a
# program that leaks half of what it allocates: a worst case for the live
# table); then times `info` (decode + counts) and `top` (decode + lifetimes
# + call tree + ranking) and `report` (the HTML report; its size is printed)
# on each, best of 3 runs by CPU time (user+sys: the machine is shared, wall
# time mostly measures others).  With chromium, the reports' first paint and
# filter-update times in the headless browser follow (tests/report_tests.py).
set -e
cd "$(dirname "$0")"
OUT=${BENCH_DIR:-build/bench}
STEPS=${BENCH_STEPS:-5000000}
mkdir -p "$OUT"
[ -f "$OUT/big.mpt" ] || build/gen_trace --format memprof --no-leak --rate 0.1 --steps "$STEPS" -o "$OUT/big.mpt" >/dev/null
[ -f "$OUT/big.ctf" ] || build/gen_trace --format ctf --no-leak --rate 0.1 --steps "$STEPS" -o "$OUT/big.ctf" >/dev/null
TRACES="$OUT/big.mpt $OUT/big.ctf"
BIN=${OCAMLMEMPROF_BIN:-../_install/bin}
if [ -x "$BIN/ocamlopt" ]; then
  OCAMLOPT="$(cd "$BIN" && pwd)/ocamlopt"
  if [ ! -f "$OUT/leaky.trace" ]; then
    cp tests/leaky.ml "$OUT/"
    (cd "$OUT" && "$OCAMLOPT" -g -I +unix unix.cmxa leaky.ml -o leaky.exe)
    OCAMLRUNPARAM="memprof=$OUT/leaky.trace,memprof_rate=0.1,memprof_seed=3" "$OUT/leaky.exe" 2000000 >/dev/null
  fi
  TRACES="$TRACES $OUT/leaky.trace"
fi
for f in $TRACES; do
  n=$(./ocaml-memprof info --json "$f" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["events"].values()))')
  for cmd in info top report; do
    best=
    out=; [ $cmd = report ] && out="-o $f.html"
    for i in 1 2 3; do
      t=$( { /usr/bin/time -f "%U %S" ./ocaml-memprof $cmd $out "$f" >/dev/null; } 2>&1 | awk '{print $1+$2}')
      best=$(python3 -c "b='$best'; print(min(float(b), $t) if b else $t)")
    done
    python3 -c "print('%-6s %-32s %9d events  %.3f s CPU  %6.1f M events/s' % ('$cmd', '$f', $n, $best, $n / max($best, 1e-3) / 1e6))"
  done
  echo "report $f.html: $(wc -c < "$f.html") bytes"
done
if command -v chromium > /dev/null; then
  python3 tests/report_tests.py --bench $(for f in $TRACES; do echo "$f.html"; done)
fi

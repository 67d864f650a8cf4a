#!/bin/sh
# bench_memory.sh: what a live sample costs top, leaks and report
# (`make -C tools bench-memory`).  Generates a trace whose live set grows
# to 3.7 M samples over 4 domains (gen_trace --many-live: a leak from 4096
# stacks, ids in per-domain blocks and chunks as the runtime writes them),
# then prints, per command, peak RSS minus the same command's on a tiny
# trace, divided by the samples live at the end, and the wall and CPU time.
set -e
cd "$(dirname "$0")"
OUT=${BENCH_DIR:-build/bench}
STEPS=${BENCH_LIVE_STEPS:-1500000}
mkdir -p "$OUT"
big="$OUT/many-live-$STEPS.mpt"
[ -f "$big" ] || build/gen_trace --format memprof --many-live 4 --rate 0.1 --steps "$STEPS" -o "$big" >/dev/null
[ -f "$OUT/tiny.mpt" ] || build/gen_trace --format memprof --steps 1000 -o "$OUT/tiny.mpt" >/dev/null
live=$(./ocaml-memprof info --json "$big" | python3 -c 'import json,sys; print(json.load(sys.stdin)["live_at_end_blocks"])')
n=$(./ocaml-memprof info --json "$big" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["events"].values()))')
echo "$big: $live samples live at the end, $n events"
for cmd in top leaks report; do
  out=; [ $cmd = report ] && out="-o $OUT/many-live.html"
  tiny=$( { /usr/bin/time -f "%M" ./ocaml-memprof $cmd $out "$OUT/tiny.mpt" >/dev/null; } 2>&1 | tail -1)
  set -- $( { /usr/bin/time -f "%M %e %U %S" ./ocaml-memprof $cmd $out "$big" >/dev/null; } 2>&1 | tail -1)
  python3 -c "print('%-6s %8d KB peak RSS  %6.1f bytes per live sample  %5.2f s wall  %5.2f s CPU' % ('$cmd', $1, ($1 - $tiny) * 1024 / $live, $2, $3 + $4))"
done

#!/bin/bash
# bench/snapshot/run.sh PREFIX [MILLIONS [OUT.md]]: heap snapshot at scale
# (issue 11), run by `make bench` (bench/Makefile's `snapshot` target).
#
# Builds bigheap.ml with PREFIX's ocamlopt and takes one snapshot of
# MILLIONS (default 16) million chains of list cell + record + option box
# (3 blocks, 64 bytes each).  Measures:
# - the pause, from the snapshot's END record (what the program sees: the
#   roots, then the clone, with the walk in a forked child, the default),
#   per GiB of live heap; the child's walk (WALK record) against a major
#   cycle of the same heap (Gc.major, timed by bigheap), and the child's
#   private memory at its end (the snapshot's extra memory);
# - the same with memprof_snapshot_fork=0 (the walk in the pause);
# - bytes written per live block: the LZ4 file, and a second run with
#   memprof_compress=0 for the encoding itself (per block + per edge);
# - `ocaml-memprof retainers` (decode, graph, dominators, retained sizes)
#   on the snapshot: wall, CPU (user + system) and peak RSS (GNU time),
#   of the median of RETAINERS_RUNS runs (default 3).
# - the walk against Gc.major as the heap grows: SCALING_MILLIONS (default
#   "4 16 27": 0.30, 1.19 and 2.01 GiB live) with SCALING_RUNS runs (default
#   3) of each walk, the forked child's and the pause's; each run's walk is
#   divided by its own Gc.major, and the median ratio is the figure (the
#   system's cost of a page fault, most of the child's system time, moves
#   from run to run on a VM); the same for mixheap.ml, a heap of mixed
#   shapes (MIXED_MIB, default 2500: 36 M blocks, 0.99 GiB live).
# Writes a markdown table to OUT.md (default: stdout) with the machine's
# load average at start and end: wall times on a shared machine move with
# it, CPU times less.
set -eu
PREFIX=$(cd "$1" && pwd); M=${2:-16}; OUT=${3:-/dev/stdout}
here=$(cd "$(dirname "$0")" && pwd)
W=${BENCH_WORKDIR:-/tmp/memprof-snapshot-bench}
TOOL="$PREFIX/bin/ocaml-memprof"
mkdir -p "$W"
load_start=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
# (compiled in $W: the compiler writes its .cm* files beside the source)
for p in bigheap mixheap; do
  cp "$here/$p.ml" "$W/"
  (cd "$W" && { "$PREFIX/bin/ocamlopt" -O2 -I +unix unix.cmxa -o $p $p.ml 2>/dev/null \
    || "$PREFIX/bin/ocamlopt" -I +unix unix.cmxa -o $p $p.ml; })
done
rm -f "$W"/big.trace "$W"/big-raw.trace
# One run of $PROG $M: the trace at $1, extra OCAMLRUNPARAM keys in $2;
# prints "wall_s max_rss_kB" (the program's output in $1.out).
PROG=bigheap
run() {
  /usr/bin/time -o "$W/time.txt" -f "%e %M" env \
    OCAMLRUNPARAM="memprof=$1,memprof_rate=0$2" "$W/$PROG" "$M" > "$1.out"
  cat "$W/time.txt"
}
# "pause_ns walk_ns extra_bytes walk_mode gc_major_s" of the trace $1
walk_figures() {
  "$TOOL" info --json "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)["heap_snapshots"][-1]
major = [l.split()[1] for l in open(sys.argv[1]) if l.startswith("gc_major_s")][0]
print(s["pause_ns"], s["walk_ns"], s["walk_extra_bytes"], s["walk"], major)' "$1.out"
}
prog=$(run "$W/big.trace" "")
fork=$(walk_figures "$W/big.trace")
run "$W/big-pause.trace" ",memprof_snapshot_fork=0" > /dev/null
inpause=$(walk_figures "$W/big-pause.trace")
rm -f "$W"/big-pause.trace
raw_prog=$(run "$W/big-raw.trace" ",memprof_compress=0")
header=$("$TOOL" retainers -n 1 "$W/big.trace" | head -1)
evo=$("$TOOL" retainers --evolution --bytes "$W/big.trace" | sed -n 2p)
# "wall user sys maxrss_kB" of the median run by wall time, then the
# fastest and slowest walls: the system time is mostly page faults, whose
# cost on a VM moves several-fold from run to run (the same 12 M-block
# snapshot, 93 k faults each time: 3.8, 1.4 and 0.3 s of system time)
ret=$(for i in $(seq "${RETAINERS_RUNS:-3}"); do
  /usr/bin/time -o "$W/time.txt" -f "%e %U %S %M" "$TOOL" retainers "$W/big.trace" > /dev/null
  cat "$W/time.txt"
done | sort -n -k 1 | awk '{ l[NR] = $0; w[NR] = $1 } END { print l[int((NR + 1) / 2)], w[1], w[NR], NR }')
# "GIB MEDIAN MIN MAX" of walk / Gc.major over SCALING_RUNS runs of the
# program $1 with argument $2 and the extra OCAMLRUNPARAM keys $3
scaling_ratios() {
  local PROG=$1 M=$2 i
  for i in $(seq "${SCALING_RUNS:-3}"); do
    run "$W/scale.trace" "$3" > /dev/null
    "$TOOL" info --json "$W/scale.trace" | python3 -c '
import json, sys
s = json.load(sys.stdin)["heap_snapshots"][-1]
major = float([l.split()[1] for l in open(sys.argv[1]) if l.startswith("gc_major_s")][0])
print(s["bytes"] / 2**30, s["walk_ns"] / 1e9 / major)' "$W/scale.trace.out"
    rm -f "$W/scale.trace"
  done | sort -n -k 2 | awk '{ g = $1; r[NR] = $2 } END { print g, r[int((NR + 1) / 2)], r[1], r[NR] }'
}
scaling=""
for hm in $(printf 'bigheap@%s ' ${SCALING_MILLIONS:-4 16 27}) \
          $(printf 'mixheap@%s ' ${MIXED_MIB:-2500}); do
  p=${hm%@*} m=${hm#*@}
  scaling="$scaling$hm $(scaling_ratios $p "$m" "") $(scaling_ratios $p "$m" ",memprof_snapshot_fork=0");"
done
size=$(stat -c %s "$W/big.trace"); raw=$(stat -c %s "$W/big-raw.trace")
rm -f "$W"/big-raw.trace
load_end=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
awk -v header="$header" -v evo="$evo" -v prog="$prog" -v raw_prog="$raw_prog" \
    -v fork="$fork" -v inpause="$inpause" \
    -v ret="$ret" -v size="$size" -v raw="$raw" -v m="$M" -v scaling="$scaling" \
    -v runs="${SCALING_RUNS:-3}" \
    -v l0="$load_start" -v l1="$load_end" -v date="$(date -u +%Y-%m-%d)" 'BEGIN {
  n = split(header, h, " ")
  for (i = 1; i <= n; i++) {
    if (h[i] == "blocks,") blocks = h[i - 1]
    if (h[i] == "edges") edges = h[i - 1]
  }
  split(evo, e, " "); live = e[4]
  split(prog, p, " "); split(raw_prog, q, " "); split(ret, r, " ")
  gib = live / 1073741824
  printf "# Heap snapshot at scale (issue 11)\n\n"
  printf "`bench/snapshot/run.sh PREFIX %s` (from `make bench`), %s; load average %s at start, %s at end (2 shared cores: wall times move with the load).\n\n", m, date, l0, l1
  printf "| figure | value | target |\n|---|---|---|\n"
  printf "| live blocks / edges | %d / %d | >= 30 M blocks |\n", blocks, edges
  printf "| live heap | %.3f GiB | >= 1 GiB |\n", gib
  split(fork, f, " "); split(inpause, q0, " ")
  printf "| pause, walk in a forked child (END record; walk: %s) | %.1f ms = **%.1f ms per GiB** | <= 50 ms per GiB |\n", f[4], f[1] / 1e6, f[1] / 1e6 / gib
  printf "| walk of the forked child (WALK record) / Gc.major of the same heap | %.2f s / %.2f s = **%.2f x** | <= 1.5 x |\n", f[2] / 1e9, f[5], f[2] / 1e9 / f[5]
  printf "| extra memory of the snapshot (private memory of the child at its end) | %.2f GiB (%.0f %% of the live heap) | |\n", f[3] / 1073741824, 100 * f[3] / live
  printf "| pause, walk in the pause (memprof_snapshot_fork=0; walk: %s) | %.2f s = %.2f s per GiB; walk %.2f s = %.2f x Gc.major (%.2f s) | |\n", q0[4], q0[1] / 1e9, q0[1] / 1e9 / gib, q0[2] / 1e9, q0[2] / 1e9 / q0[5], q0[5]
  printf "| bytes per block, LZ4 file | %.3f | <= 4 + edges |\n", size / blocks
  printf "| bytes before LZ4 (memprof_compress=0) | %d: **%.2f per block+edge** (%.2f per block) | <= 4 per block + edges |\n", raw, raw / (blocks + edges), raw / blocks
  printf "| program (allocation, full major cycle, snapshot), wall / peak RSS | %.1f s / %.0f MB | |\n", p[1], p[2] / 1024
  printf "| `retainers` wall, median of %d runs (fastest-slowest) | **%.1f s** (%.1f-%.1f) | <= 15 s |\n", r[7], r[1], r[5], r[6]
  printf "| `retainers` CPU of that run (user + system) | %.1f s (%.1f + %.1f) | |\n", r[2] + r[3], r[2], r[3]
  printf "| `retainers` peak RSS | **%.2f GiB** | <= 2.5 GiB |\n", r[4] / 1048576
  n = split(scaling, sc, ";")
  if (n > 1) {
    printf "\nThe walk against a major cycle (Gc.major) of the same heap as it grows: median of %d runs of each walk (min-max), each walk over the Gc.major of its own run.\n\n", runs
    printf "| heap (program and argument) | live heap | walk in the forked child / Gc.major | walk in the pause / Gc.major | target |\n|---|---|---|---|---|\n"
    for (i = 1; i < n; i++) {
      split(sc[i], v, " "); gsub(/@/, " ", v[1])
      printf "| %s | %.2f GiB | **%.2f x** (%.2f-%.2f) | %.2f x (%.2f-%.2f) | <= 1.5 x |\n", v[1], v[2], v[3], v[4], v[5], v[7], v[8], v[9]
    }
  }
}' > "$OUT"

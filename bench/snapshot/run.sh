#!/bin/bash
# bench/snapshot/run.sh PREFIX [MILLIONS [OUT.md]]: heap snapshot at scale
# (issue 11), run by `make bench` (bench/Makefile's `snapshot` target).
#
# Builds bigheap.ml with PREFIX's ocamlopt and takes one snapshot of
# MILLIONS (default 16) million chains of list cell + record + option box
# (3 blocks, 64 bytes each).  Measures:
# - the pause, from the snapshot's END record (walk, encoding, header
#   restore, compression and writes: what the program sees), per GiB of
#   live heap;
# - bytes written per live block: the LZ4 file, and a second run with
#   memprof_compress=0 for the encoding itself (per block + per edge);
# - `ocaml-memprof retainers` (decode, graph, dominators, retained sizes)
#   on the snapshot: wall, CPU (user + system) and peak RSS (GNU time).
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
"$PREFIX/bin/ocamlopt" -O2 -I +unix unix.cmxa -o "$W/bigheap" "$here/bigheap.ml" 2>/dev/null \
  || "$PREFIX/bin/ocamlopt" -I +unix unix.cmxa -o "$W/bigheap" "$here/bigheap.ml"
rm -f "$W"/big.trace "$W"/big-raw.trace
# One run: the trace at $1, extra OCAMLRUNPARAM keys in $2; prints
# "wall_s max_rss_kB".
run() {
  /usr/bin/time -o "$W/time.txt" -f "%e %M" env \
    OCAMLRUNPARAM="memprof=$1,memprof_rate=0$2" "$W/bigheap" "$M" > /dev/null
  cat "$W/time.txt"
}
prog=$(run "$W/big.trace" "")
raw_prog=$(run "$W/big-raw.trace" ",memprof_compress=0")
header=$("$TOOL" retainers -n 1 "$W/big.trace" | head -1)
evo=$("$TOOL" retainers --evolution --bytes "$W/big.trace" | sed -n 2p)
/usr/bin/time -o "$W/time.txt" -f "%e %U %S %M" "$TOOL" retainers "$W/big.trace" > /dev/null
ret=$(cat "$W/time.txt")
size=$(stat -c %s "$W/big.trace"); raw=$(stat -c %s "$W/big-raw.trace")
rm -f "$W"/big-raw.trace
load_end=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo '?')
awk -v header="$header" -v evo="$evo" -v prog="$prog" -v raw_prog="$raw_prog" \
    -v ret="$ret" -v size="$size" -v raw="$raw" -v m="$M" \
    -v l0="$load_start" -v l1="$load_end" -v date="$(date -u +%Y-%m-%d)" 'BEGIN {
  n = split(header, h, " ")
  for (i = 1; i <= n; i++) {
    if (h[i] == "blocks,") blocks = h[i - 1]
    if (h[i] == "edges") edges = h[i - 1]
    if (h[i] == "pause") { pause_ms = h[i + 1] }
  }
  split(evo, e, " "); live = e[4]
  split(prog, p, " "); split(raw_prog, q, " "); split(ret, r, " ")
  gib = live / 1073741824
  printf "# Heap snapshot at scale (issue 11)\n\n"
  printf "`bench/snapshot/run.sh PREFIX %s` (from `make bench`), %s; load average %s at start, %s at end (2 shared cores: wall times move with the load).\n\n", m, date, l0, l1
  printf "| figure | value | target |\n|---|---|---|\n"
  printf "| live blocks / edges | %d / %d | >= 30 M blocks |\n", blocks, edges
  printf "| live heap | %.3f GiB | >= 1 GiB |\n", gib
  printf "| pause (END record) | %.2f s = **%.2f s per GiB** | <= 1 s per GiB |\n", pause_ms / 1000, pause_ms / 1000 / gib
  printf "| bytes per block, LZ4 file | %.3f | <= 4 + edges |\n", size / blocks
  printf "| bytes before LZ4 (memprof_compress=0) | %d: **%.2f per block+edge** (%.2f per block) | <= 4 per block + edges |\n", raw, raw / (blocks + edges), raw / blocks
  printf "| program (allocation, full major cycle, snapshot), wall / peak RSS | %.1f s / %.0f MB | |\n", p[1], p[2] / 1024
  printf "| `retainers` wall | **%.1f s** | <= 30 s |\n", r[1]
  printf "| `retainers` CPU (user + system) | %.1f s (%.1f + %.1f) | |\n", r[2] + r[3], r[2], r[3]
  printf "| `retainers` peak RSS | **%.2f GiB** | <= 4 GiB |\n", r[4] / 1048576
}' > "$OUT"

#!/bin/bash
# testsuite/snapshots.sh PREFIX: heap snapshots (issue 11), end to end:
# programs of known retention (testsuite/programs/snap_*.ml) traced with
# the installed compiler in PREFIX, analysed with `ocaml-memprof
# retainers`.  Acceptance: the Hashtbl leak is named by its module global,
# with the path to the leaking site's blocks and the retained size within
# 5 % of Obj.reachable_words.  Last line: "N passed, N failed".
set -u
PREFIX=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
W=${TEST_WORKDIR:-${MEMPROF_BUILD_DIR:-$top/_build}/tests}/snapshots
rm -rf "$W"; mkdir -p "$W"
export PATH="$PREFIX/bin:$PATH"
unset OCAMLRUNPARAM CAMLRUNPARAM
# OCAML_MEMPROF: the tool to test (default: PREFIX's, else the tree's)
MP=${OCAML_MEMPROF:-$PREFIX/bin/ocaml-memprof}
[ -x "$MP" ] || MP=$top/tools/ocaml-memprof

pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
check() { local name=$1; shift; if "$@"; then ok "$name"; else ko "$name"; fi; }
# bytes "1.23 MB" -> 1230000
bytes() { awk -v n="$1" -v u="$2" 'BEGIN { m = u == "B" ? 1 : u == "kB" ? 1e3 : u == "MB" ? 1e6 : u == "GB" ? 1e9 : 0; printf "%.0f", n * m }'; }
# root_retained OUTPUT KIND LABEL-REGEX: retained bytes of the first such root
root_retained() {
  local line
  line=$(awk -v k="$2" -v l="$3" '/^Top roots/ { on = 1; next } /^$/ { on = 0 }
    on && $4 == k { lab = $0; sub(/^ *[^ ]+ [^ ]+ +[^ ]+ +[^ ]+ +/, "", lab); if (lab ~ l) { print $1, $2; exit } }' "$1")
  [ -n "$line" ] && bytes $line || echo -1
}
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= p / 100 * b) }'; }

cd "$W"
# (compiled here: the compilers write their .cm* files next to the source)
cp "$here"/programs/snap_*.ml "$here"/programs/snap_*.c .
for p in snap_hashtbl snap_retention snap_domains snap_memprof snap_holders snap_weak snap_live snap_exact; do
  ocamlopt -g -o "$p" "$p.ml" > "$p.build" 2>&1 || ko "build $p" "$(head -3 "$p.build")"
done
ocamlopt -g -I +unix unix.cmxa -o snap_signal snap_signal.ml > snap_signal.build 2>&1 || ko "build snap_signal"
ocamlopt -g -runtime-variant d -o snap_stress snap_stress.ml > snap_stress.build 2>&1 || ko "build snap_stress (debug runtime)"
ocamlc -g -o snap_hashtbl.byte snap_hashtbl.ml > snap_hashtbl.byte.build 2>&1 || ko "build snap_hashtbl.byte"

# ---- acceptance: a Hashtbl held by a module global (native) ----
OCAMLRUNPARAM="memprof=$W/h.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_hashtbl > h.out 2> h.err
check "hashtbl: runs, nothing on stderr" [ $? -eq 0 -a ! -s h.err ]
truth=$(awk '$1 == "truth" { print $2 }' h.out)
"$MP" retainers --site make_entry "$W/h.trace" > h.ret 2> h.ret.err
check "hashtbl: retainers exit 0" [ $? -eq 0 ]
first=$(awk '/^Top roots/ { getline; getline; print $4, $5; exit }' h.ret)
check "hashtbl: the top root is the module global Snap_hashtbl ('$first')" [ "$first" = "global Snap_hashtbl" ]
got=$(root_retained h.ret global '^Snap_hashtbl$')
check "hashtbl: retained by Snap_hashtbl $got B, truth $truth B (Obj.reachable_words), within 5 %" within "$got" "$truth" 5
check "hashtbl: the retainer path starts at the global and reaches make_entry's strings" \
  awk '/^Retainer paths/ { on = 1 } on && /global Snap_hashtbl/ { g = 1 } on && g && /-> string .*from/ { s = 1 } END { exit !(g && s) }' h.ret
# ---- blocks packed as close as the heap puts them (the walk's id slot
# per two words): the retained size is exactly Obj.reachable_words', in
# the child's walk and in the pause's ----
# ("s1", "s0": the sweep's, in the child and in the pause)
for fk in 1 0 s1 s0; do
  sw=0; [ "${fk#s}" != "$fk" ] && sw=1
  OCAMLRUNPARAM="memprof=$W/exact$fk.trace,memprof_rate=1e-3,memprof_snapshot_fork=${fk#s},memprof_snapshot_sweep=$sw" ./snap_exact > exact$fk.out 2> exact$fk.err
  check "exact (fork=${fk#s}, sweep=$sw): runs, nothing on stderr" [ $? -eq 0 -a ! -s exact$fk.err ]
  truth=$(awk '$1 == "truth" { print $2 }' exact$fk.out)
  got=$("$MP" retainers --json "$W/exact$fk.trace" 2> /dev/null | python3 -c '
import json, sys
print(sum(r["retained"] for r in json.load(sys.stdin)["roots"] if r["label"] == "Snap_exact"))' 2> /dev/null)
  check "exact (fork=${fk#s}, sweep=$sw): refs, options, floats, pairs, infix closures retained ${got:-?} B, truth $truth B" [ -n "$truth" -a "${got:-x}" = "$truth" ]
done
# The strings: 20000 x (200 bytes -> 26 words + header) = 4.32 MB; estimate +- 4.5 se.
est=$(awk '/^Live sampled/ { on = 1; next } on && /Bytes.make|String.make/ { print $1, $2, $3, $4; exit }' h.ret)
set -- $est
if [ $# -eq 4 ] && awk -v e="$(bytes $1 $2)" -v s="$(bytes $3 $4)" 'BEGIN { d = e - 4320000; if (d < 0) d = -d; exit !(d <= 4.5 * s + 1e4) }'
then ok "hashtbl: site estimate $1 $2 +- $3 $4 covers the true 4.32 MB"
else ko "hashtbl: site estimate" "'$est'"; fi
pause=$(awk '/^heap snapshot/ { for (i = 1; i <= NF; i++) if ($i == "pause") print $(i + 1) }' h.ret)
check "hashtbl: the pause is recorded ($pause ms)" [ -n "$pause" ]

# ---- bytecode ----
OCAMLRUNPARAM="memprof=$W/hb.trace,memprof_rate=1e-3,memprof_seed=7" ocamlrun ./snap_hashtbl.byte > hb.out 2> hb.err
check "bytecode: runs" [ $? -eq 0 -a ! -s hb.err ]
truth=$(awk '$1 == "truth" { print $2 }' hb.out)
"$MP" retainers --site String.make "$W/hb.trace" > hb.ret 2>&1
# While the main module initialises, its toplevel values live on the
# bytecode stack (they reach caml_global_data at the end of its code).
got=$(root_retained hb.ret stack '^bytecode stack$')
check "bytecode: the bytecode stack retains the table: $got B, truth $truth B, within 5 %" within "$got" "$truth" 5
check "bytecode: the path to String.make's strings (make_entry is a tail call) starts at the bytecode stack" \
  awk '/^Retainer paths/ { on = 1 } on && /stack bytecode stack/ { g = 1 } on && g && /-> string/ { s = 1 } END { exit !(g && s) }' hb.ret

# ---- other retention kinds ----
OCAMLRUNPARAM="memprof=$W/r.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_retention > r.out 2> r.err
check "retention: runs ($(cat r.out))" [ "$(cat r.out)" = "100000 1 true" -a ! -s r.err ]
"$MP" retainers -n 50 --site make_captured "$W/r.trace" > r.ret 2>&1
got=$(root_retained r.ret stack 'hold_on_stack')
check "retention: a stack frame of hold_on_stack retains its array ($got B >= 800 kB)" [ "$got" -ge 800000 ]
got=$(root_retained r.ret finaliser 'finalisers')
check "retention: the finaliser's function retains its array ($got B >= 400 kB)" [ "$got" -ge 400000 ]
check "retention: the closure captured by the global record: path global -> record -> list -> closure" \
  awk '/^Retainer paths/ { on = 1 } on && /global Snap_retention/ { g = 1 } on && g && /-> closure/ { c = 1 } END { exit !(g && c) }' r.ret
check "retention: the bigarray's 8 MB outside the heap" grep -q '+ 8 MB outside the heap' r.ret
weak=$(sed -n 's/.*edges (\([0-9]*\) weak).*/\1/p' r.ret)
check "retention: the live ephemeron's key edge is weak ($weak weak edges)" [ "${weak:-0}" -ge 1 ]
live=$(awk '/^heap snapshot/ { for (i = 1; i <= NF; i++) if ($i == "live") { print $(i + 1), $(i + 2); exit } }' r.ret | tr -d ',')
check "retention: the dead key's ephemeron data (2.4 MB) is gone (live $live)" [ "$(bytes $live)" -lt 3500000 ]

# ---- every holder (issue 33): a list held by a module global and by a
# local of the running function at the snapshot, and a second list of the
# same site by the global alone (20000 + 10000 strings).  The shortest
# path starts at the frame; the global keeps them all once it returns ----
OCAMLRUNPARAM="memprof=$W/hd.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_holders > hd.out 2> hd.err
check "holders: runs ($(cat hd.out))" [ "$(cat hd.out)" = "stack_and_global 20000 global_only 10000" -a ! -s hd.err ]
"$MP" retainers --site make_entry "$W/hd.trace" > hd.ret 2>&1
# holder_share ROOT: "through% alone%" of the first holder group of ROOT
holder_share() { awk -v r="$1" '/^Holders/ { on = 1; next } on && /^  through/ { t = $0; next }
  on && t != "" && index($0, "    " r) == 1 {
    while (match(t, /[0-9.]+%/)) { printf "%s ", substr(t, RSTART, RLENGTH - 1); t = substr(t, RSTART + RLENGTH) }
    exit } { t = "" }' hd.ret; }
shares="$(holder_share "global Snap_holders")$(holder_share "stack Snap_holders.process")"
set -- $shares - - - -
# Shares of ~820 sampled strings: one standard error is about 1.6 points.
check "holders: both listed; the global reaches all (through $1 %) and alone a third (alone $2 %), the frame two thirds (through $3 %, alone $4 %)" \
  awk -v n="$(echo $shares | wc -w)" -v a="$1" -v b="$2" -v c="$3" -v d="$4" \
    'BEGIN { exit !(n == 4 && a >= 99 && b >= 26.7 && b <= 40 && c >= 60 && c <= 73.3 && d == 0) }'

# ---- blocks reachable only through weak references (issue 33): 10000
# strings of 216 bytes held only by a Weak array at the snapshot ----
OCAMLRUNPARAM="memprof=$W/wk.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_weak > wk.out 2> wk.err
check "weak: runs ($(cat wk.out))" [ "$(cat wk.out)" = "strong 10000 weak 20000" -a ! -s wk.err ]
"$MP" retainers --bytes "$W/wk.trace" > wk.ret 2>&1
sum=$(awk '/^Retained by root kind/ { on = 1; getline; next } on && /^  [a-z]/ { s += $3 } on && /^$/ { exit } END { printf "%.1f", s }' wk.ret)
check "weak: the kinds add up to 100 % ($sum %)" awk -v s="$sum" 'BEGIN { exit !(s >= 99.7 && s <= 100.3) }'
got=$(awk '/^Retained by root kind/ { on = 1 } on && $1 == "weak" { print $2; exit }' wk.ret)
check "weak: the weak kind retains the 10000 weakly reachable strings ($got B, truth 2160000 B, within 5 %)" within "${got:-0}" 2160000 5
check "weak: the sites table has a row for weakly reachable sampled blocks" grep -q '  (reachable only through weak references)$' wk.ret

# ---- one live figure (issue 33): 40 MB kept, 40 MB dropped just before
# the snapshot (not swept until after it).  The timeline's estimated live
# just after the snapshot, while the program idles, must be the
# snapshot's live bytes within 2 standard errors: the estimate counts
# samples of word_bytes / rate = 8000 bytes, a Poisson count, so its
# standard error is sqrt(live * 8000) (0.57 MB here) ----
OCAMLRUNPARAM="memprof=$W/lv.trace,memprof_rate=1e-3,memprof_seed=1" ./snap_live > lv.out 2> lv.err
check "live: runs ($(cat lv.out))" [ "$(cat lv.out)" = "kept 40040000 dropped 40040000" -a ! -s lv.err ]
"$MP" retainers --json "$W/lv.trace" > lv.json 2>&1
set -- $(python3 -c 'import json, sys; s = json.load(open(sys.argv[1]))["snapshot"]; print(s["time_ns"] + s["pause_ns"], s["live_bytes"])' lv.json)
"$MP" timeline --csv --bins 2000 "$W/lv.trace" > lv.csv 2>&1
tl=$(awk -F, -v t="$1" 'NR > 1 && $1 * 1e9 >= t + 2e6 { print $2; exit }' lv.csv)
check "live: the timeline just after the snapshot (${tl:-?} B) = the snapshot's live $2 B within 2 standard errors" \
  awk -v a="${tl:-0}" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 2 * sqrt(b * 8000)) }'

# ---- what statmemprof holds: Gc.Memprof's tracker data in 3 domains ----
# kind_retained OUTPUT KIND: exact retained bytes of a root kind (--bytes)
kind_retained() { awk -v k="$2" '/^Retained by root kind/ { on = 1 } on && $1 == k { print $2; exit }' "$1"; }
for m in memprof plain; do
  OCAMLRUNPARAM="memprof=$W/m-$m.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_memprof $m > m-$m.out 2> m-$m.err
  check "memprof roots ($m): runs, nothing on stderr" [ $? -eq 0 -a ! -s m-$m.err ]
  "$MP" retainers --bytes -n 200 "$W/m-$m.trace" > m-$m.ret 2>&1
done
held=$(awk '$1 == "held" { print $2 }' m-memprof.out)
got=$(kind_retained m-memprof.ret memprof)
# Before statmemprof's roots were scanned, the buffers were missing from
# the snapshot and the memprof kind retained nothing.
check "memprof roots: the memprof kind retains the 3 domains' tracker buffers: $got B, truth $held B, within 5 %" \
  within "${got:-0}" "$held" 5
first=$(awk '/^Top roots/ { getline; getline; print $3, $4, $5, $6; exit }' m-memprof.ret)
check "memprof roots: the top root is 'memprof Gc.Memprof tracker data' ('$first')" [ "$first" = "memprof Gc.Memprof tracker data" ]
# (--bytes: the first column is the exact byte count)
global_bytes() { awk '/^Top roots/ { on = 1 } on && $3 == "global" && $4 == "Snap_memprof" { print $1; exit }' "$1"; }
g1=$(global_bytes m-memprof.ret); g0=$(global_bytes m-plain.ret)
kept=$(awk '$1 == "kept" { print $2 }' m-plain.out)
check "memprof roots: the module global retains the same with and without Gc.Memprof ($g1 B, $g0 B; its lists $kept B)" \
  [ -n "$g0" ] && [ "$g1" = "$g0" -a "$g0" -ge "$kept" ]
check "memprof roots: without Gc.Memprof, no memprof root (the tracer's weak references to blocks dead in this cycle are not followed)" \
  [ -z "$(kind_retained m-plain.ret memprof)" ]

# ---- several domains allocating during the snapshots ----
OCAMLRUNPARAM="memprof=$W/d.trace,memprof_rate=1e-3,memprof_seed=7" ./snap_domains > d.out 2> d.err
check "domains: runs" [ "$(cat d.out)" = "done" -a ! -s d.err ]
"$MP" retainers --evolution "$W/d.trace" > d.evo 2>&1
check "domains: 3 snapshots decode" [ "$(grep -c '^ *[0-9]' d.evo)" -eq 3 ]
"$MP" retainers -n 100 "$W/d.trace" > d.ret 2>&1
# The main domain keeps nothing on its stack; the workers' lists (up to
# 5000 cells of 24 words each) are retained by their stacks.
got=$(awk '/^Retained by root kind/ { on = 1 } on && $1 == "stack" { print $2, $3; exit }' d.ret)
check "domains: the workers' stacks are roots (stack retains $got)" [ "$(bytes $got)" -ge 100000 ]

# ---- a trace cut inside a snapshot ----
OCAMLRUNPARAM="memprof=$W/big.trace,memprof_rate=1e-4,memprof_compress=0" ./snap_hashtbl 300000 > /dev/null 2>&1
size=$(stat -c %s big.trace)
head -c $((size * 3 / 4)) big.trace > cut.trace
"$MP" retainers cut.trace > cut.ret 2> cut.err
rc=$?
full=$("$MP" retainers big.trace | sed -n 's/^heap snapshot [0-9]* at [^:]*: \([0-9]*\) blocks.*/\1/p')
part=$(sed -n 's/^heap snapshot [0-9]* at [^:]*: \([0-9]*\) blocks.*/\1/p' cut.ret)
check "cut: readable prefix ($part of $full blocks), one warning, exit 0" \
  [ $rc -eq 0 -a -n "$part" -a "${part:-0}" -gt 0 -a "${part:-0}" -lt "${full:-0}" -a "$(wc -l < cut.err)" -eq 1 ]

# ---- triggers ----
OCAMLRUNPARAM="memprof=$W/only.trace,memprof_rate=0,memprof_snapshot_at_exit=1" ./snap_signal 0.2 > only.out 2> only.err
check "snapshot only (rate 0) at exit: runs" [ "$(cat only.out)" = done -a ! -s only.err ]
"$MP" retainers "$W/only.trace" > only.ret 2>&1
check "snapshot only: one snapshot, no samples" grep -q 'no sampled block is live' only.ret
"$MP" info "$W/only.trace" > /dev/null 2>&1
check "snapshot only: info reads a rate-0 trace" [ $? -eq 0 ]
OCAMLRUNPARAM="memprof=$W/sig.trace,memprof_rate=1e-4,memprof_snapshot_signal=USR2" ./snap_signal 2 > sig.out 2> sig.err &
pid=$!; sleep 0.7; kill -USR2 $pid; wait $pid
check "signal: runs" [ "$(cat sig.out)" = done -a ! -s sig.err ]
n=$("$MP" retainers --evolution "$W/sig.trace" 2>/dev/null | grep -c '^ *[0-9]')
check "signal: SIGUSR2 took a snapshot ($n)" [ "$n" -eq 1 ]
OCAMLRUNPARAM="memprof=$W/cyc.trace,memprof_rate=1e-4,memprof_snapshot_every_cycles=2" ./snap_signal 0.5 > /dev/null 2>&1
n=$("$MP" retainers --evolution "$W/cyc.trace" 2>/dev/null | grep -c '^ *[0-9]')
check "every 2 cycles: several snapshots ($n)" [ "$n" -ge 2 ]
OCAMLRUNPARAM="memprof=$W/bad.trace,memprof_snapshot_every_s=soon" ./snap_signal 0.1 > bad.out 2> bad.err
check "bad memprof_snapshot_every_s: one stderr line, program unchanged" \
  [ "$(cat bad.out)" = done -a "$(wc -l < bad.err)" -eq 1 ]

# ---- headers given back: a snapshot at every cycle end while 3 domains
# build and check data, on the debug runtime verifying the heap (V=1) ----
OCAMLRUNPARAM="v=0,V=1,memprof=$W/stress.trace,memprof_rate=1e-4,memprof_snapshot_every_cycles=1" \
  ./snap_stress > stress.out 2> stress.err
cycles=$(sed -n 's/^ok //p' stress.out)
n=$("$MP" retainers --evolution "$W/stress.trace" 2>/dev/null | grep -c '^ *[0-9]')
check "stress: 3 domains' data intact after $n snapshots in $cycles cycles, heap verified, nothing on stderr" \
  [ -n "$cycles" -a "${n:-0}" -ge 10 -a ! -s stress.err ]

# ---- forked walks (issue 32): the same snapshot as the walk in the
# pause, for every kind of root the pause records (1, 2 and 4 domains, a
# systhread, a suspended fiber, C local roots); address randomisation off
# (setarch -R) so that both runs build the same heap ----
ocamlopt -g -I +unix -I +threads unix.cmxa threads.cmxa snap_fork_same_stubs.c snap_fork_same.ml \
  -o snap_fork_same > snap_fork_same.build 2>&1 || ko "build snap_fork_same" "$(head -3 snap_fork_same.build)"
norandom() { setarch "$(uname -m)" -R "$@"; }
# snapshot_facts TRACE: the snapshot's walk mode, then its blocks, bytes,
# edges, and retainers' tables without the header (which has the pause)
snapshot_facts() {
  "$MP" info --json "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)["heap_snapshots"]
print(len(s), s[0]["walk"], s[0]["blocks"], s[0]["bytes"], s[0]["edges"], s[0]["complete"])'
  "$MP" retainers --bytes -n 1000 "$1" | sed 1d
}
# Modes: "fork sweep" (the sweep's runs: s1 in the child, s0 in the pause)
for nd in 1 2 4; do
  for mode in 1 0 s1 s0; do
    fk=${mode#s}; sw=0; [ "$mode" != "$fk" ] && sw=1
    OCAMLRUNPARAM="memprof=$W/same$nd-$mode.trace,memprof_rate=0,memprof_snapshot_fork=$fk,memprof_snapshot_sweep=$sw" \
      norandom ./snap_fork_same $nd > same$nd-$mode.out 2> same$nd-$mode.err
    snapshot_facts "$W/same$nd-$mode.trace" > same$nd-$mode.facts 2>&1
  done
  read -r n1 walk1 blocks1 _ <<< "$(head -1 same$nd-1.facts)"
  read -r n0 walk0 blocks0 _ <<< "$(head -1 same$nd-0.facts)"
  check "fork, $nd domain(s): both runs print the same ($(cat same$nd-1.out)), nothing on stderr" \
    [ "$(cat same$nd-1.out)" = "$(cat same$nd-0.out)" -a -s same$nd-1.out -a ! -s same$nd-1.err -a ! -s same$nd-0.err ]
  check "fork, $nd domain(s): one snapshot each, walked in a forked child ($walk1) and in the pause ($walk0)" \
    [ "$n1" = 1 -a "$n0" = 1 -a "$walk1" = fork -a "$walk0" = pause ]
  check "fork, $nd domain(s): same blocks, bytes, edges, roots and retained sizes ($blocks1 blocks; $blocks0 in the pause)" \
    [ "$(tail -n +2 same$nd-1.facts | md5sum)" = "$(tail -n +2 same$nd-0.facts | md5sum)" \
      -a "$(head -1 same$nd-1.facts | cut -d' ' -f3-)" = "$(head -1 same$nd-0.facts | cut -d' ' -f3-)" \
      -a "${blocks1:-0}" -gt 30000 ]
  # A sweep writes the blocks no root reaches too (info counts them), which
  # retainers drops: its tables must be the walk from the roots' ones.
  read -r _ walks1 blockss1 _ <<< "$(head -1 same$nd-s1.facts)"
  read -r _ walks0 blockss0 _ <<< "$(head -1 same$nd-s0.facts)"
  check "sweep, $nd domain(s): both runs print the same, nothing on stderr, walked in a child ($walks1) and in the pause ($walks0)" \
    [ "$(cat same$nd-s1.out)" = "$(cat same$nd-0.out)" -a "$(cat same$nd-s0.out)" = "$(cat same$nd-0.out)" \
      -a ! -s same$nd-s1.err -a ! -s same$nd-s0.err -a "$walks1" = fork -a "$walks0" = pause ]
  check "sweep, $nd domain(s): retainers' blocks, bytes, roots and retained sizes those of the walk from the roots ($blockss1 and $blockss0 blocks written, $blocks0 reached)" \
    [ "$(tail -n +2 same$nd-s1.facts | md5sum)" = "$(tail -n +2 same$nd-0.facts | md5sum)" \
      -a "$(tail -n +2 same$nd-s0.facts | md5sum)" = "$(tail -n +2 same$nd-0.facts | md5sum)" \
      -a "${blockss1:-0}" -ge "${blocks0:-1}" -a "${blockss0:-0}" -ge "${blocks0:-1}" ]
done
kinds=$(awk '/^Retained by root kind/ { on = 1; next } /^$/ { on = 0 } on { print $1 }' same4-1.facts | sort | tr '\n' ' ')
check "fork: the module global, stacks, C local roots and the systhread retain ($kinds)" \
  [ "$(echo " $kinds" | grep -c ' global .*local .*stack .*thread ')" -eq 1 ]

# ---- forked walks and the program's own children: a snapshot at every
# cycle end changes nothing of what the program sees ----
ocamlopt -g -I +unix unix.cmxa snap_fork_children.ml -o snap_fork_children > sfc.build 2>&1 \
  || ko "build snap_fork_children" "$(head -3 sfc.build)"
for mode in reap sigchld waitall; do
  ./snap_fork_children $mode > ch-$mode.plain 2>&1
  OCAMLRUNPARAM="memprof=$W/ch-$mode.trace,memprof_rate=1e-4,memprof_snapshot_every_cycles=1" \
    ./snap_fork_children $mode > ch-$mode.out 2> ch-$mode.err
  forked=$("$MP" info "$W/ch-$mode.trace" 2>/dev/null | grep -c 'walked in a forked child')
  # (the tracer's note on each child of the program, traced without %p)
  others=$(grep -vc '^memprof: not tracing forked child' ch-$mode.err)
  check "children, $mode: the same output traced ($(cat ch-$mode.out)) as untraced, $forked forked snapshots, nothing else on stderr" \
    [ "$(cat ch-$mode.out)" = "$(cat ch-$mode.plain)" -a "$others" -eq 0 -a "${forked:-0}" -ge 2 ]
done
check "children: untraced, the programs see what they should" \
  [ "$(cat ch-reap.plain)" = "reaped 20 of 20 with their status" \
    -a "$(cat ch-sigchld.plain)" = "SIGCHLD without children: 0; with children: true" \
    -a "$(cat ch-waitall.plain)" = "wait () without children returned 0; its 5 children: true; then ECHILD: true" ]

# ---- SIGKILL of the walking child, or of the program, at random moments:
# the trace stays readable ----
ocamlopt -g -I +unix unix.cmxa snap_fork_kill.ml -o snap_fork_kill > sfk.build 2>&1 \
  || ko "build snap_fork_kill" "$(head -3 sfk.build)"
RANDOM=32
OCAMLRUNPARAM="memprof=$W/kc.trace,memprof_rate=1e-4,memprof_snapshot_every_cycles=1" \
  ./snap_fork_kill 4 > kc.out 2> kc.err &
pid=$!; killed=0
for _ in 1 2 3 4 5 6 7 8; do
  sleep "0.$((RANDOM % 4 + 1))"
  for c in $(pgrep -P $pid); do kill -KILL "$c" 2>/dev/null && killed=$((killed + 1)); done
done
wait $pid; rc=$?
"$MP" info "$W/kc.trace" > kc.info 2>&1; irc=$?
n=$(grep -c 'walked in a forked child' kc.info)
check "kill child: $killed walking children killed; the program ends as usual ($(cat kc.out)), info reads the trace ($n complete snapshots), no companion file left" \
  [ $rc -eq 0 -a $irc -eq 0 -a "$killed" -ge 1 -a ! -s kc.err -a ! -e "$W/kc.trace.snapshot" ] && grep -q '^done' kc.out
for t in 1 2 3; do
  OCAMLRUNPARAM="memprof=$W/kp$t.trace,memprof_rate=1e-4,memprof_snapshot_every_cycles=1" \
    ./snap_fork_kill 10 > /dev/null 2>&1 &
  pid=$!
  sleep "$((RANDOM % 2)).$((RANDOM % 10))"
  children=$(pgrep -P $pid)
  kill -KILL $pid; wait $pid 2>/dev/null
  gone=1
  for c in $children; do
    for _ in $(seq 50); do kill -0 "$c" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$c" 2>/dev/null && { gone=0; kill -KILL "$c"; }
  done
  "$MP" info "$W/kp$t.trace" > kp$t.info 2>&1; irc=$?
  check "kill program ($t): info reads the trace (exit $irc), its walking child ($children) gave up" [ $irc -eq 0 -a $gone -eq 1 ]
done

# ---- a compiler's heap: ocamlopt.opt compiling typing/typecore.ml (the
# build tree's copy, when there is one) ----
big=$(ls "${MEMPROF_BUILD_DIR:-$top/_build}"/src/typing/typecore.ml 2>/dev/null | head -n 1)
if [ -n "$big" ]; then
  mkdir -p compiler; cp "$big" "${big%.ml}.mli" compiler/
  (cd compiler && OCAMLRUNPARAM="memprof=$W/oc.trace,memprof_rate=1e-4,memprof_snapshot_at_exit=1" \
     ocamlopt.opt -c -I +compiler-libs typecore.mli typecore.ml) > oc.out 2>&1
  check "compiler: ocamlopt.opt compiles typecore.ml with a snapshot at exit" [ $? -eq 0 ]
  "$MP" retainers "$W/oc.trace" > oc.ret 2> oc.err
  rc=$?
  blocks=$(sed -n 's/^heap snapshot 1 at [^:]*: \([0-9]*\) blocks.*/\1/p' oc.ret)
  top=$(awk '/^Top roots/ { getline; getline; print $4; exit }' oc.ret)
  check "compiler: retainers analyses its snapshot ($blocks blocks), a module global on top ($top)" \
    [ $rc -eq 0 -a ! -s oc.err -a "${blocks:-0}" -gt 100000 -a "$top" = global ]
  "$MP" info "$W/oc.trace" > /dev/null 2>&1
  check "compiler: info decodes the trace" [ $? -eq 0 ]
fi

# ---- a build through %p traces: every process of a small build (3
# ocamlopt runs and the program) writes its own trace with a snapshot at
# exit; each decodes and analyses.  SNAPSHOT_DUNE_TBZ=dune-X.tbz: the
# same over `ocaml boot/bootstrap.ml` of that dune release (~1 600
# processes, minutes) ----
mkdir -p build-p && cd build-p
printf 'let table = Hashtbl.create 16\nlet add k = Hashtbl.replace table k (String.make 100 (Char.chr (65 + k mod 26)))\n' > a.ml
printf 'let () = for k = 1 to 1000 do A.add k done; print_int (Hashtbl.length A.table)\n' > b.ml
(export OCAMLRUNPARAM="memprof=$W/build-p/t.%p,memprof_rate=1e-4,memprof_snapshot_at_exit=1"
 ocamlopt.opt -c a.ml && ocamlopt.opt -c b.ml && ocamlopt.opt a.cmx b.cmx -o prog && ./prog) > build.out 2>&1
check "%p build: 3 compiler runs and the program, traced ($(cat build.out))" [ "$(cat build.out)" = 1000 ]
analyse_all() {  # DIR: "traces analysed failed"
  local n=0 ok=0 bad=0 f
  for f in "$1"/t.*; do
    n=$((n + 1))
    if "$MP" info "$f" > /dev/null 2>&1 && "$MP" retainers -n 3 "$f" > /dev/null 2>&1; then ok=$((ok + 1)); else bad=$((bad + 1)); fi
  done
  echo "$n $ok $bad"
}
set -- $(analyse_all "$W/build-p")
check "%p build: $1 traces, each with a snapshot that decodes and analyses ($3 failed)" [ "$1" -eq 4 -a "$2" -eq 4 ]
cd "$W"
if [ -n "${SNAPSHOT_DUNE_TBZ:-}" ]; then
  mkdir -p dune dune-traces && tar -xjf "$SNAPSHOT_DUNE_TBZ" -C dune
  (cd dune/dune-* && OCAMLRUNPARAM="memprof=$W/dune-traces/t.%p,memprof_snapshot_at_exit=1" \
     ocaml boot/bootstrap.ml -j 2) > dune.out 2>&1
  check "dune bootstrap traced" [ $? -eq 0 ]
  set -- $(analyse_all "$W/dune-traces")
  check "dune bootstrap: $1 traces, each with a snapshot that decodes and analyses ($3 failed)" [ "$1" -gt 100 -a "$2" -eq "$1" ]
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/bash
# testsuite/tsan.sh DIR STAGE [VARIANT]: race detection (issue 10).
#
# Builds OCaml with upstream's ThreadSanitizer support (--enable-tsan) from
# the assembled tree STAGE (pristine 5.3.0 + our runtime files and patches)
# in DIR/src, installs it in DIR/install, compiles the multi-domain tracer
# test programs with it and runs each one traced and untraced (the control).
#
# Pass criterion: no TSan report with a tracer frame (memprof_tracer.c,
# memprof_trace_writer.c, memprof_trace_codec.c, caml_memprof_tracer_*,
# caml_trace_writer_*).  Reports without one are upstream's; the known ones
# are suppressed by testsuite/tsan.supp (each entry explained there) and any
# other is counted and listed, but does not fail the run.
#
# VARIANT "vanilla" builds STAGE as given (pass the pristine tree) and runs
# the programs untraced only: the upstream reports show up there too (when
# timing allows), which is how the suppressions were checked to be upstream's.
# TSAN_CC=clang is untested (gcc 12 was used).
#
# Needs libunwind-dev (upstream's TSan backtraces) and gcc >= 11 or
# clang >= 11.  Uses JOBS (default 2) parallel jobs.  Environment:
#   TSAN_CC=clang   build with clang instead of the default cc
#   TSAN_RUNS=N     runs of each traced program (default 2)
#   TSAN_NO_SUPP=1  run without the suppressions file (to see everything)
#   TSAN_NO_BUILD=1 use DIR/install as it is (no sync, no build)
# Last line: "N passed, N failed".
set -u
DIR=$1; STAGE=$(cd "$2" && pwd); VARIANT=${3:-ours}
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
JOBS=${JOBS:-2}
mkdir -p "$DIR"; DIR=$(cd "$DIR" && pwd)
SRC=$DIR/src; PREFIX=$DIR/install; W=$DIR/tests; LOG=$DIR/build.log

pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit; }

# ---- requirements ----
if [ ! -f /usr/include/libunwind.h ] && [ ! -f /usr/include/x86_64-linux-gnu/libunwind.h ] \
   && [ ! -f "/usr/include/$(uname -m)-linux-gnu/libunwind.h" ]; then
  ko "libunwind headers" "upstream's TSan support needs libunwind-dev (build-aux/install-deps.sh --tsan installs it)"
  finish
fi

# ---- build (incremental: the stage is synced by content, as for _build/src) ----
build() {
  local t0 changes
  t0=$(date +%s)
  mkdir -p "$SRC"
  changes=$(rsync -rlc --itemize-changes "$STAGE"/ "$SRC"/ | sed -n 's/^>f[^ ]* //p')
  if [ -n "$changes" ] && [ -f "$DIR/built.stamp" ]; then
    echo "$changes" | sed 's/^/tsan sync: /' | head -n 20
    rm -f "$DIR/built.stamp"
    if echo "$changes" | grep -qv -e '^runtime/' -e '^$' || echo "$changes" | grep -q domain_state.tbl; then
      echo "tsan sync: files outside runtime/ changed: cleaning the TSan build tree"
      make -C "$SRC" clean > /dev/null 2>&1
    fi
  fi
  [ -f "$DIR/built.stamp" ] && return 0
  echo "tsan: building a TSan compiler in $SRC (log: $LOG); about 20 minutes on 2 cores"
  if [ ! -f "$SRC/Makefile.config" ]; then
    (cd "$SRC" && ./configure --prefix="$PREFIX" --enable-tsan --disable-ocamldoc \
       --disable-debugger ${TSAN_CC:+CC=$TSAN_CC} -C) > "$LOG" 2>&1 ||
      { tail -n 20 "$LOG"; rm -f "$SRC/Makefile.config"; ko "configure --enable-tsan" "see $LOG"; finish; }
  fi
  # The bytecode compilers and the native stdlib, unix and threads are all
  # the tests need: no native-code compilers (ocamlopt.opt, built with TSan,
  # would double the time).  ocamlopt here is ocamlopt.byte.
  { make -C "$SRC" -j"$JOBS" world && make -C "$SRC" -j"$JOBS" opt && make -C "$SRC" install; } >> "$LOG" 2>&1 ||
    { tail -n 30 "$LOG"; ko "build the TSan compiler" "see $LOG"; finish; }
  touch "$DIR/built.stamp"
  echo "tsan: built in $(( $(date +%s) - t0 )) s"
}
if [ -n "${TSAN_NO_BUILD:-}" ]; then
  [ -x "$PREFIX/bin/ocamlopt" ] || { ko "TSAN_NO_BUILD: no compiler in $PREFIX"; finish; }
else build; fi
ok "TSan compiler built and installed in $PREFIX ($("$PREFIX/bin/ocamlopt" -version))"
grep -q '^TSAN=true' "$PREFIX/lib/ocaml/Makefile.config" 2>/dev/null \
  || grep -q 'tsan: true' <("$PREFIX/bin/ocamlopt" -config) \
  || { ko "the compiler has TSan enabled" "$("$PREFIX/bin/ocamlopt" -config | grep -i tsan)"; finish; }
ok "the compiler has TSan enabled"

# ---- the programs, built with the TSan compiler ----
rm -rf "$W"; mkdir -p "$W/reports"
export PATH="$PREFIX/bin:$PATH"
export OCAMLLIB="$PREFIX/lib/ocaml"   # also for a moved copy (TSAN_NO_BUILD)
unset OCAMLRUNPARAM CAMLRUNPARAM
P=$here/programs
build_prog() { # NAME LIBS...: as testsuite/run.sh builds them
  cp "$P/$1.ml" "$W/"
  (cd "$W" && ocamlopt -g -I +unix -I +threads "${@:2}" -o "$1" "$1.ml") > "$W/$1.build" 2>&1 ||
    { ko "build $1 with the TSan compiler" "$(head -c 300 "$W/$1.build")"; return 1; }
}
built=""
for p in keepalive orphans domains "threads_alloc unix.cmxa threads.cmxa" "spawner unix.cmxa" \
         snap_domains snap_memprof; do
  # shellcheck disable=SC2086
  build_prog $p && built="$built ${p%% *}"
done
ok "the test programs compile with the TSan compiler:$built"
if [ "$VARIANT" = ours ]; then
  cc -O2 -I"$top/runtime" -o "$W/trace_summary" "$here/tools/trace_summary.c" \
    "$top/runtime/memprof_trace_codec.c" -llz4 || ko "build trace_summary"
fi

# ---- reports ----
# TSan runs with no suppressions (every report is written, one file per
# process, by log_path); the classification is ours: a report with a tracer
# frame is never suppressed, even when an upstream frame of the same report
# matches an entry of tsan.supp (TSan's own suppressions would hide it).
SUPP=$here/tsan.supp
TRACER_RE='memprof_tracer\.c|memprof_trace_writer\.c|memprof_trace_codec\.c|memprof_heap_snapshot\.c|caml_memprof_tracer_|caml_trace_writer_|caml_heap_snapshot_'
export TSAN_OPTIONS="detect_deadlocks=0 history_size=4 second_deadlock_stack=1 halt_on_error=0 exitcode=0"
# classify FILES...: one line per report, "tracer|known ENTRY|unknown" TAB
# the report's summary line TAB the file; an entry of tsan.supp matches
# when its text occurs in frame #0 or #1 of one of the racing accesses.
classify() {
  local pats=""
  [ -z "${TSAN_NO_SUPP:-}" ] && [ -f "$SUPP" ] && pats=$(sed -n 's/^[a-z_]*:\([^ #]*\).*/\1/p' "$SUPP")
  local f
  for f in "$@"; do [ -s "$f" ] || continue
  awk -v tre="$TRACER_RE" -v pats="$pats" '
    BEGIN { np = split(pats, pat, "\n") }
    function flush() {
      if (!inrep) return
      kind = "unknown"
      if (tracer) kind = "tracer"
      else for (i = 1; i <= np; i++) if (pat[i] != "" && index(frames, pat[i])) { kind = "known " pat[i]; break }
      printf "%s\t%s\t%s\n", kind, summary, FILENAME
      inrep = 0
    }
    /WARNING: ThreadSanitizer:/ { flush(); inrep = 1; tracer = 0; frames = ""; acc = 0; summary = $0; next }
    inrep && /^SUMMARY: ThreadSanitizer:/ { summary = $0 }
    inrep && $0 ~ tre { tracer = 1 }
    # frames #0 and #1 of each racing access (the lines after "Write of
    # size 8 at ... by thread T1", "Previous read of size ...", ...)
    inrep && /^  [A-Za-z ]*(read|write|Read|Write) of size/ { acc = 1; next }
    inrep && acc && /^ *#[01] / { frames = frames "\n" $2 " " $3; next }
    inrep && acc && !/^ *#[0-9]/ { acc = 0 }
    inrep && /^==================/ && summary ~ /^SUMMARY/ { flush() }
    END { flush() }' "$f"
  done
}

# run NAME MODE ARGS...: MODE traced|untraced; OCAMLRUNPARAM comes from TRACE
ntracer=0; nknown=0; nunknown=0
run() {
  local name=$1 mode=$2; shift 2
  local rdir=$W/reports/$name-$mode st t0 cls nt nk nu
  mkdir -p "$rdir"
  t0=$(date +%s)
  if [ "$mode" = traced ]; then
    TSAN_OPTIONS="$TSAN_OPTIONS log_path=$rdir/tsan" OCAMLRUNPARAM="$TRACE" \
      "$W/$@" > "$rdir/out" 2> "$rdir/err"
  else
    TSAN_OPTIONS="$TSAN_OPTIONS log_path=$rdir/tsan" "$W/$@" > "$rdir/out" 2> "$rdir/err"
  fi
  st=$?
  [ "$st" = 0 ] && ok "$name $mode: exit status 0 ($(( $(date +%s) - t0 )) s)" \
    || ko "$name $mode: exit status $st" "$(tail -n 3 "$rdir/err")"
  cls=$(classify /dev/null "$rdir"/tsan.* 2>/dev/null)
  echo "$cls" | sed '/^$/d' > "$rdir/classified"
  nt=$(grep -c '^tracer' "$rdir/classified"); nk=$(grep -c '^known' "$rdir/classified")
  nu=$(grep -c '^unknown' "$rdir/classified")
  ntracer=$((ntracer + nt)); nknown=$((nknown + nk)); nunknown=$((nunknown + nu))
  if [ "$nt" = 0 ]; then ok "$name $mode: no TSan report with a tracer frame ($nk known upstream, $nu other)"
  else ko "$name $mode: $nt TSan report(s) with a tracer frame" "see $rdir"
    grep '^tracer' "$rdir/classified" | cut -f2,3 | sed 's/^/    /'; fi
  [ "$nu" = 0 ] || grep '^unknown' "$rdir/classified" | cut -f2,3 | sed 's/^/  note: not in tsan.supp, no tracer frame: /'
  if [ "$mode" = traced ] && [ -n "${TRACEFILE:-}" ] && [ -x "$W/trace_summary" ]; then
    "$W/trace_summary" "$TRACEFILE" > "$rdir/summary" 2>&1
    if grep -q '^error none' "$rdir/summary" && grep -q '^ended 1' "$rdir/summary"; then
      ok "$name traced: the trace decodes and is complete"
    else ko "$name traced: the trace" "$(grep -E '^(error|ended)' "$rdir/summary" | tr '\n' ' ')"; fi
  fi
}

runs=${TSAN_RUNS:-2}
t0=$(date +%s)
progs() { # MODE: every program, as testsuite/run.sh runs them (smaller keepalive)
  local mode=$1 r f
  for r in $( [ "$mode" = traced ] && seq "$runs" || echo 1); do
    # run 2 and later flush every millisecond: the flusher thread then
    # takes every stream's lock and reads the domain table constantly
    f=""; [ "$r" -gt 1 ] && f=",memprof_flush_ms=1"
    TRACEFILE=$W/keep2-$r.trace TRACE="memprof=$W/keep2-$r.trace,memprof_rate=0.05,memprof_seed=$r$f" run keepalive2-$r $mode keepalive 2 50000
    TRACEFILE=$W/keep4-$r.trace TRACE="memprof=$W/keep4-$r.trace,memprof_rate=0.05,memprof_seed=$r$f" run keepalive4-$r $mode keepalive 4 25000
    TRACEFILE=$W/orphans-$r.trace TRACE="memprof=$W/orphans-$r.trace,memprof_rate=0.1,memprof_seed=$r$f" run orphans-$r $mode orphans 5
    TRACEFILE=$W/domains-$r.trace TRACE="memprof=$W/domains-$r.trace,memprof_rate=1e-4,memprof_seed=$r$f" run domains-$r $mode domains
    TRACEFILE=$W/threads-$r.trace TRACE="memprof=$W/threads-$r.trace,memprof_rate=1e-4,memprof_seed=$r$f" run threads_alloc-$r $mode threads_alloc
    TRACEFILE=$W/spawn-$r.trace TRACE="memprof=$W/spawn-$r.trace,memprof_rate=1e-3$f" run spawner-$r $mode spawner
    TRACEFILE="" TRACE="memprof=$W/exec-$r.trace,memprof_rate=1e-3$f" run spawner-exec-$r $mode spawner exec
    # heap snapshots while other domains allocate; the walker reads the
    # other domains' statmemprof tables (snap_memprof runs Gc.Memprof)
    TRACEFILE=$W/snapd-$r.trace TRACE="memprof=$W/snapd-$r.trace,memprof_rate=1e-3$f" run snap_domains-$r $mode snap_domains
    TRACEFILE=$W/snapm-$r.trace TRACE="memprof=$W/snapm-$r.trace,memprof_rate=1e-3$f" run snap_memprof-$r $mode snap_memprof memprof
  done
}
progs untraced
[ "$VARIANT" = ours ] && progs traced
echo "tsan: programs ran in $(( $(date +%s) - t0 )) s; TSan reports: $ntracer with a tracer frame, $nknown known upstream (tsan.supp), $nunknown other upstream"
cat "$W"/reports/*/classified 2>/dev/null | cut -f1,2 | sort | uniq -c | sort -rn > "$W/all-reports.txt"
sed 's/^/  /' "$W/all-reports.txt"
finish

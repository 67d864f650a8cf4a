#!/bin/sh
# test-switch.sh OUTDIR
#
# End-to-end test of the opam switch, with the repository and archive mirror
# that prepare-mirror.sh wrote to OUTDIR, in a fresh temporary OPAMROOT: the
# commands of opam-switch/README.md, in order, then the sample project
# testsuite/opam-project built unchanged, run with tracing on, and its trace
# checked. Needs no network.
#
# Each step logs to its own file; the first failure prints the step, the
# reason and the end of that log, and the script exits non-zero. opam's
# "has been ignored" error (a package file opam could not read, e.g. a url it
# does not understand, after which it builds without sources) counts as a
# failure even though opam goes on.
#
# Environment:
#   MEMPROF_EXPECT_VERSION  the switch to create (the compiler package's
#                           version), which `ocamlopt -version` must print
#                           (default 5.3.0+memprof; or 5.4.1+memprof)
#   KEEP_OPAMROOT=1         keep the temporary OPAMROOT and logs afterwards
set -eu

prog=test-switch.sh
here=$(cd "$(dirname "$0")" && pwd)
project="$here/../testsuite/opam-project"

[ $# -eq 1 ] || {
  echo "usage: $prog OUTDIR   (OUTDIR as given to prepare-mirror.sh)" >&2
  exit 2
}
repo=$(cd "$1" 2>/dev/null && pwd)/repo || true
[ -f "$repo/repo" ] || {
  echo "$prog: no opam repository in $1/repo (run prepare-mirror.sh first)" >&2
  exit 1
}
expect_version=${MEMPROF_EXPECT_VERSION:-5.3.0+memprof}

for tool in opam rsync; do
  command -v "$tool" > /dev/null || {
    echo "$prog: $tool is not installed (opam needs rsync for local repositories)" >&2
    exit 1
  }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/memprof-switch.XXXXXX")
cleanup() {
  if [ "${KEEP_OPAMROOT:-0}" = 1 ]; then
    echo "$prog: kept $work (OPAMROOT $work/root, logs $work/logs)"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
mkdir -p "$work/logs"

export OPAMROOT="$work/root"
export OPAMJOBS=2 OPAMYES=1 OPAMCOLOR=never OPAMROOTISOK=1
unset OPAMSWITCH OPAM_SWITCH_PREFIX

step=0
fail() {
  echo "$prog: step $step ($name) FAILED: $*" >&2
  if [ -s "$log" ]; then
    echo "---- last lines of $log" >&2
    tail -n 40 "$log" >&2
  fi
  KEEP_OPAMROOT=1
  exit 1
}

# run NAME COMMAND...: runs one step, logs it, times it, fails on a non-zero
# exit or on opam's "has been ignored" error.
run() {
  step=$((step + 1))
  name=$1
  shift
  log="$work/logs/$step-$name.log"
  start=$(date +%s)
  if ! "$@" > "$log" 2>&1; then
    fail "'$*' exited with an error"
  fi
  if grep -q "has been ignored" "$log"; then
    fail "opam ignored part of a package file: $(grep -m 1 'has been ignored' "$log")"
  fi
  echo "$prog: step $step ($name) ok in $(($(date +%s) - start)) s"
}

# --- the README's commands --------------------------------------------------
run init opam init --bare -n --disable-sandboxing memprof "$repo"
run switch-create opam switch create "$expect_version"
eval "$(opam env --switch="$expect_version")"

step=$((step + 1)) name=compiler-version log=/dev/null
got=$(ocamlopt -version 2>&1) || fail "ocamlopt -version: $got"
[ "$(command -v ocamlopt)" = "$OPAMROOT/$expect_version/bin/ocamlopt" ] ||
  fail "ocamlopt is $(command -v ocamlopt), not the switch's"
[ "$got" = "$expect_version" ] ||
  fail "ocamlopt -version says '$got', expected '$expect_version'"
echo "$prog: step $step ($name) ok: $got"

run install-dune opam install dune

# --- the sample project, unchanged ------------------------------------------
# Built in a copy so that the source tree stays clean.
cp -R "$project" "$work/project"
cd "$work/project"
run dune-build dune build

trace="$work/pageserver.memprof"
step=$((step + 1)) name=run-traced log="$work/logs/$step-$name.log"
start=$(date +%s)
OCAMLRUNPARAM="memprof=$trace,memprof_rate=1e-4" ./_build/default/bin/pageserver.exe \
  > "$log" 2>&1 || fail "pageserver.exe exited with an error"
grep -q '^served 250000 requests' "$log" || fail "pageserver.exe did not serve all requests"
echo "$prog: step $step ($name) ok in $(($(date +%s) - start)) s: $(grep -m 1 '^served' "$log")"

# --- the trace ----------------------------------------------------------------
step=$((step + 1)) name=trace-written log=/dev/null
case $got in
  *+memprof)
    [ -s "$trace" ] || fail "OCAMLRUNPARAM=memprof=$trace wrote no trace"
    echo "$prog: step $step ($name) ok: $(wc -c < "$trace") bytes"
    ;;
  *) echo "$prog: step $step ($name) SKIPPED: the compiler ($got) is not a +memprof one" ;;
esac

# `ocaml-memprof leaks` must rank first the function whose cache is never
# evicted (its JSON lists sites best first, one "site" key each).
step=$((step + 1)) name=leaks log="$work/logs/$step-$name.log"
if [ ! -s "$trace" ]; then
  echo "$prog: step $step ($name) SKIPPED: no trace"
elif command -v ocaml-memprof > /dev/null; then
  ocaml-memprof leaks --json "$trace" > "$log" 2>&1 || fail "ocaml-memprof leaks exited with an error"
  first=$(grep -o '"site": *"[^"]*"' "$log" | head -n 1)
  [ -n "$first" ] || fail "ocaml-memprof leaks found no growing site"
  case $first in
    *Session_cache.remember*) echo "$prog: step $step ($name) ok: first $first" ;;
    *) fail "the first site is not Session_cache.remember: $first" ;;
  esac
else
  echo "$prog: step $step ($name) SKIPPED: the switch has no ocaml-memprof"
fi

# Types (issue 31) on the project as dune builds it, unchanged: the
# library's .cmt files come with its bytecode objects; the executable's
# own module has none without `dune build @check`, which one hint line
# says.  At most 5 % of the allocated bytes may be untyped.
step=$((step + 1)) name=types log="$work/logs/$step-$name.log"
if [ ! -s "$trace" ]; then
  echo "$prog: step $step ($name) SKIPPED: no trace"
elif ! command -v ocaml-memprof-types > /dev/null; then
  echo "$prog: step $step ($name) SKIPPED: the switch has no ocaml-memprof-types"
else
  ocaml-memprof top --by type --json -n 0 "$trace" > "$log" 2> "$log.err" ||
    fail "ocaml-memprof top --by type exited with an error: $(head -c 300 "$log.err")"
  unknown=$(python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
print("%.1f" % (100.0 * sum(r["alloc_bytes"] for r in d["rows"] if r["key"].startswith("unknown"))
                / max(d["total"]["alloc_bytes"], 1)))' "$log") || fail "top --by type wrote no JSON"
  python3 -c "import sys; sys.exit(not $unknown <= 5)" ||
    fail "top --by type leaves $unknown % of the allocated bytes untyped (at most 5 %)"
  grep -q 'bin/pageserver.ml' "$log.err" || fail "no hint names bin/pageserver.ml (no .cmt without @check)"
  echo "$prog: step $step ($name) ok: $unknown % of the allocated bytes untyped, the hint names bin/pageserver.ml"
fi

echo "$prog: all steps passed"

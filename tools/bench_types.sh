#!/bin/sh
# bench_types.sh: what --by type costs (`make -C tools bench-types`), on a
# trace of ocamlopt.opt compiling the standard library's
# camlinternalFormat.ml (2,991 lines; rate 10^-3, about 58,000 samples;
# the compiler's types from the compiler-libs .cmt files installed with it).
# For top, leaks, timeline, pprof and report: instructions (callgrind)
# without and with --by type from a warm cache, and their ratio (the
# acceptance of issue 31: at most 2); then the CPU time (user+sys, best of
# 3: the machine is shared) of top --by type cold (empty cache: the helper
# reads the .cmt files) and cached.  BIN: the +memprof install whose
# ocamlopt.opt is traced (../_install/bin).
set -e
cd "$(dirname "$0")"
BIN=${OCAMLMEMPROF_BIN:-../_install/bin}
OUT=${BENCH_DIR:-build/bench-types}
mkdir -p "$OUT"
BIN=$(cd "$BIN" && pwd)
TRACE=$OUT/ocamlopt.trace
if [ ! -f "$TRACE" ]; then
  cp "$BIN/../lib/ocaml/camlinternalFormat.ml" "$OUT/"
  (cd "$OUT" && OCAMLRUNPARAM="memprof=ocamlopt.trace,memprof_rate=1e-3,memprof_seed=1" \
     "$BIN/ocamlopt.opt" -g -c camlinternalFormat.ml)
fi
export XDG_CACHE_HOME="$(pwd)/$OUT/cache"
rm -rf "$XDG_CACHE_HOME"
./ocaml-memprof top --by type "$TRACE" > /dev/null 2>&1    # fills the cache
for cmd in top leaks "timeline -o /dev/null" "pprof -o $OUT/p.pb.gz" "report -o $OUT/r.html"; do
  if command -v valgrind > /dev/null; then
    a=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null ./ocaml-memprof $cmd "$TRACE" 2>&1 >/dev/null \
        | awk '/Collected/ {print $4}')
    b=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null ./ocaml-memprof $cmd --by type "$TRACE" 2>&1 >/dev/null \
        | awk '/Collected/ {print $4}')
    python3 -c "print('%-8s %6.0f M instructions, --by type (cached) %6.0f M: x%.2f' % ('${cmd%% *}', $a / 1e6, $b / 1e6, $b / $a))"
  fi
done
# cpu MODE ARGS...: the best CPU time of 3 runs of top ARGS; MODE cold
# empties the cache before each.
cpu() {
  mode=$1; shift
  best=
  for i in 1 2 3; do
    [ "$mode" = cold ] && rm -rf "$XDG_CACHE_HOME"
    /usr/bin/time -o "$OUT/time" -f "%U %S" ./ocaml-memprof top "$@" "$TRACE" >/dev/null 2>&1
    t=$(awk '{print $1+$2}' "$OUT/time")
    best=$(python3 -c "b='$best'; print(min(float(b), $t) if b else $t)")
  done
  echo "$best"
}
echo "CPU s, best of 3: top $(cpu warm), top --by type cold $(cpu cold --by type), cached $(cpu warm --by type)"

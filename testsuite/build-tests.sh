#!/bin/bash
# testsuite/build-tests.sh [PREFIX]: the build's promises (issue: build from pristine
# 5.3.0 / 5.4.1).  Run after a build, for $OCAML_VERSION (default 5.3.0) in
# $MEMPROF_BUILD_DIR (default _build).  Last line: "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
V=${OCAML_VERSION:-5.3.0}
BUILD=${MEMPROF_BUILD_DIR:-$top/_build}
W=$BUILD/tests/build; rm -rf "$W"; mkdir -p "$W"
# Per version: the cached release tarball and its pinned sha256.
case $V in
  5.3.0) cached=ocaml-5.3.0.tgz; pinned=c4108bac7b45c46325f0e15a988c308f7785cd6c4d29dac190df06f543f7c992;;
  5.4.1) cached=ocaml_5.4.1.orig.tar.xz; pinned=b1e297adc186635540758eb064c7fab025598ae4436f3b9767e5025188b4e0ab;;
esac
D=ocaml-$V+memprof
fetch=$top/build-aux/fetch-ocaml-source.sh
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else ko "$n"; fi; }

# A corrupt tarball is refused, naming the expected digest.
tgz=$(ls "${CACHE_DIR:-$HOME/.cache/ocaml-memprof}"/$cached 2>/dev/null | head -n 1)
if [ -n "$tgz" ]; then
  head -c 1000000 "$tgz" > "$W/cut.tgz"
  "$fetch" "$W/cut.tgz" "$W/cache" "$W/src1" > "$W/cut.out" 2>&1
  check "truncated tarball refused" [ $? -ne 0 ]
  check "the error names the expected sha256" grep -q $pinned "$W/cut.out"
  # The pinned tarball, offline when unshare can cut the network.
  net=""; unshare -n true 2>/dev/null && net="unshare -n"
  $net "$fetch" "$tgz" "$W/cache" "$W/src2" > "$W/ok.out" 2>&1
  check "pinned tarball accepted${net:+ with no network}" [ $? -eq 0 ]
fi
# A directory: accepted when its patched files are pristine, else refused.
$net "$fetch" "$BUILD/pristine" "$W/cache" "$W/src3" > "$W/dir.out" 2>&1
check "pristine directory accepted${net:+ with no network}" [ $? -eq 0 ]
cp -a "$BUILD/pristine" "$W/modified"
echo "/* changed */" >> "$W/modified/runtime/memprof.c"
"$fetch" "$W/modified" "$W/cache" "$W/src4" > "$W/mod.out" 2>&1
check "modified directory refused" [ $? -ne 0 ]
check "the error names the modified file" grep -q "runtime/memprof.c" "$W/mod.out"

# A second make has nothing to do.
make -q -C "$top" "${BUILD#$top/}/install.stamp"
check "second make does no work (install stamp up to date)" [ $? -eq 0 ]

# Version everywhere.
PREFIX=${1:-}   # from run-all.sh (make test); else config.mk's, else _install
[ -n "$PREFIX" ] || PREFIX=$(awk -F' = ' '$1 == "PREFIX" { print $2 }' "$top/config.mk" 2>/dev/null)
PREFIX=${PREFIX:-$top/_install}
check "ocamlopt -version is $V+memprof" [ "$("$PREFIX/bin/ocamlopt" -version)" = $V+memprof ]
echo 'let () = print_string Sys.ocaml_version; match Sys.ocaml_release.extra with Some (Plus, s) -> print_string (" " ^ s) | _ -> ()' > "$W/v.ml"
(cd "$W" && "$PREFIX/bin/ocamlopt" -o v v.ml && ./v > v.out)
check "Sys.ocaml_version and ocaml_release.extra" [ "$(cat "$W/v.out")" = "$V+memprof memprof" ]
echo 'let () = print_endline "hello"' > "$W/hello.ml"
(cd "$W" && "$PREFIX/bin/ocamlopt" -o hello hello.ml && ./hello > hello.out)
check "hello world links (lz4 comes with the runtime) and runs" [ "$(cat "$W/hello.out")" = hello ]
(cd "$W" && "$PREFIX/bin/ocamlc" -o hello.byte hello.ml && "$PREFIX/bin/ocamlrun" ./hello.byte > hello.byte.out)
check "bytecode hello world runs" [ "$(cat "$W/hello.byte.out")" = hello ]

# Symbol hygiene: a user's program links exactly as with vanilla OCaml.
# Upstream's rule, checked by its tools/check-symbol-names (run from the
# pristine tree): every global symbol of a runtime library is caml_-
# prefixed.  Before lz4 was made private to the runtime, every program got
# 130 LZ4*/XXH* symbols and 39 mpt_* ones.
libs=$(ls "$PREFIX"/lib/ocaml/libasmrun*.a "$PREFIX"/lib/ocaml/libcamlrun*.a 2>/dev/null)
bash "$BUILD/pristine/tools/check-symbol-names" $libs > "$W/symbols.out" 2>&1
check "check-symbol-names passes on the $(echo $libs | wc -w) runtime archives" [ $? -eq 0 ]
head -n 5 "$W/symbols.out"
for so in "$PREFIX"/lib/ocaml/libasmrun_shared.so "$PREFIX"/lib/ocaml/libcamlrun_shared.so; do
  [ -f "$so" ] || continue
  out=$(nm -D --defined-only "$so" | awk '$3 ~ /^(LZ4|XXH|mpt_)/ { print $3 }' | head -n 3)
  check "$(basename "$so") exports no lz4 nor codec name" [ -z "$out" ]
done
# C stubs that define an lz4 function and a codec function of their own.
cat > "$W/own_stubs.c" <<'EOC'
#include <caml/mlvalues.h>
int LZ4_versionNumber(void) { return 42; }
int mpt_reader_open(void) { return 7; }
value own_stubs_check(value unit) { (void)unit; return Val_int(LZ4_versionNumber() * 100 + mpt_reader_open()); }
EOC
cat > "$W/own_stubs_main.ml" <<'EOM'
external check : unit -> int = "own_stubs_check"
let () =
  let l = List.init 100_000 (fun i -> (i, i)) in
  Printf.printf "%d %d\n" (check ()) (List.length l)
EOM
(cd "$W" && "$PREFIX/bin/ocamlopt" -g -o own_stubs own_stubs.c own_stubs_main.ml) > "$W/own_stubs.build" 2>&1
check "a program whose stubs define LZ4_versionNumber and mpt_reader_open links" [ -x "$W/own_stubs" ]
head -n 5 "$W/own_stubs.build"
out=$(OCAMLRUNPARAM="memprof=$W/own_stubs.trace,memprof_rate=1e-2" "$W/own_stubs" 2> "$W/own_stubs.err")
check "... and runs traced, with its own functions ($out), nothing on stderr" \
  [ "$out" = "4207 100000" -a ! -s "$W/own_stubs.err" ]
check "... and its (compressed) trace reads" grep -q "Own_stubs_main" <("$PREFIX/bin/ocaml-memprof" top "$W/own_stubs.trace" 2>&1)
(cd "$W" && mkdir -p byte && cp own_stubs.c own_stubs_main.ml byte/ && cd byte &&
  "$PREFIX/bin/ocamlc" -custom -o own_stubs.byte own_stubs.c own_stubs_main.ml) > "$W/own_stubs.byte.build" 2>&1
out=$(OCAMLRUNPARAM="memprof=$W/own_stubs.byte.trace,memprof_rate=1e-2" "$W/byte/own_stubs.byte" 2>&1)
check "the same in bytecode (-custom): links and runs traced ($out)" [ "$out" = "4207 100000" ]

# The distribution tarball.
make -s -C "$top" dist > "$W/dist.out" 2>&1
check "make dist" [ -f "$top/$D.tar.gz" ]
tar -tzf "$top/$D.tar.gz" > "$W/dist.list"
check "dist: one top directory $D/" [ "$(cut -d/ -f1 "$W/dist.list" | sort -u)" = $D ]
check "dist: contains the tracer" grep -q "^$D/runtime/memprof_tracer.c\$" "$W/dist.list"
check "dist: configure regenerated for $D" sh -c "tar -xzOf '$top/$D.tar.gz' $D/configure | grep -q 'OCAML_VERSION_EXTRA=memprof'"

# No upstream source committed.
up=$(cd "$top" && git ls-files | grep -v '^\.ci/' | while read -r f; do
  [ -f "$f" ] && head -c 2000 "$f" | grep -q -e 'Institut National de Recherche' -e 'projet Cambium' && echo "$f"; done)
check "no committed file carries an upstream banner" [ -z "$up" ]
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

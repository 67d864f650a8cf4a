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

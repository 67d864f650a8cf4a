#!/bin/bash
# testsuite/build-tests.sh: the build's promises (issue: build from pristine
# 5.3.0).  Run after a build.  Last line: "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
W=$top/_build/tests/build; rm -rf "$W"; mkdir -p "$W"
fetch=$top/build-aux/fetch-ocaml-source.sh
pass=0; fail=0
ok() { pass=$((pass + 1)); echo "ok   $1"; }
ko() { fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"; }
check() { local n=$1; shift; if "$@"; then ok "$n"; else ko "$n"; fi; }

# A corrupt tarball is refused, naming the expected digest.
tgz=$(ls "${CACHE_DIR:-$HOME/.cache/ocaml-memprof}"/ocaml-5.3.0.tgz 2>/dev/null | head -n 1)
if [ -n "$tgz" ]; then
  head -c 1000000 "$tgz" > "$W/cut.tgz"
  "$fetch" "$W/cut.tgz" "$W/cache" "$W/src1" > "$W/cut.out" 2>&1
  check "truncated tarball refused" [ $? -ne 0 ]
  check "the error names the expected sha256" grep -q c4108bac7b45c46325f0e15a988c308f7785cd6c4d29dac190df06f543f7c992 "$W/cut.out"
  # The pinned tarball, offline when unshare can cut the network.
  net=""; unshare -n true 2>/dev/null && net="unshare -n"
  $net "$fetch" "$tgz" "$W/cache" "$W/src2" > "$W/ok.out" 2>&1
  check "pinned tarball accepted${net:+ with no network}" [ $? -eq 0 ]
fi
# A directory: accepted when its patched files are pristine, else refused.
$net "$fetch" "$top/_build/pristine" "$W/cache" "$W/src3" > "$W/dir.out" 2>&1
check "pristine directory accepted${net:+ with no network}" [ $? -eq 0 ]
cp -a "$top/_build/pristine" "$W/modified"
echo "/* changed */" >> "$W/modified/runtime/memprof.c"
"$fetch" "$W/modified" "$W/cache" "$W/src4" > "$W/mod.out" 2>&1
check "modified directory refused" [ $? -ne 0 ]
check "the error names the modified file" grep -q "runtime/memprof.c" "$W/mod.out"

# A second make has nothing to do.
make -q -C "$top" _build/install.stamp
check "second make does no work (install stamp up to date)" [ $? -eq 0 ]

# Version everywhere.
PREFIX=$(awk -F' = ' '$1 == "PREFIX" { print $2 }' "$top/config.mk" 2>/dev/null)
PREFIX=${PREFIX:-$top/_install}
check "ocamlopt -version is 5.3.0+memprof" [ "$("$PREFIX/bin/ocamlopt" -version)" = 5.3.0+memprof ]
echo 'let () = print_string Sys.ocaml_version; match Sys.ocaml_release.extra with Some (Plus, s) -> print_string (" " ^ s) | _ -> ()' > "$W/v.ml"
(cd "$W" && "$PREFIX/bin/ocamlopt" -o v v.ml && ./v > v.out)
check "Sys.ocaml_version and ocaml_release.extra" [ "$(cat "$W/v.out")" = "5.3.0+memprof memprof" ]
echo 'let () = print_endline "hello"' > "$W/hello.ml"
(cd "$W" && "$PREFIX/bin/ocamlopt" -o hello hello.ml && ./hello > hello.out)
check "hello world links (lz4 comes with the runtime) and runs" [ "$(cat "$W/hello.out")" = hello ]
(cd "$W" && "$PREFIX/bin/ocamlc" -o hello.byte hello.ml && "$PREFIX/bin/ocamlrun" ./hello.byte > hello.byte.out)
check "bytecode hello world runs" [ "$(cat "$W/hello.byte.out")" = hello ]

# The distribution tarball.
make -s -C "$top" dist > "$W/dist.out" 2>&1
check "make dist" [ -f "$top/ocaml-5.3.0+memprof.tar.gz" ]
tar -tzf "$top/ocaml-5.3.0+memprof.tar.gz" > "$W/dist.list"
check "dist: one top directory ocaml-5.3.0+memprof/" [ "$(cut -d/ -f1 "$W/dist.list" | sort -u)" = ocaml-5.3.0+memprof ]
check "dist: contains the tracer" grep -q '^ocaml-5.3.0+memprof/runtime/memprof_tracer.c$' "$W/dist.list"
check "dist: configure regenerated for 5.3.0+memprof" sh -c "tar -xzOf '$top/ocaml-5.3.0+memprof.tar.gz' ocaml-5.3.0+memprof/configure | grep -q 'OCAML_VERSION_EXTRA=memprof'"

# No upstream source committed.
up=$(cd "$top" && git ls-files | grep -v '^\.ci/' | while read -r f; do
  [ -f "$f" ] && head -c 2000 "$f" | grep -q -e 'Institut National de Recherche' -e 'projet Cambium' && echo "$f"; done)
check "no committed file carries an upstream banner" [ -z "$up" ]
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]

#!/bin/sh
# memprof_lz4_private.sh CC OUT: the runtime's private copy of lz4.
#
# The trace writer compresses with lz4's frame API.  Linking liblz4 into the
# runtime as is would put lz4's 130-odd global symbols (LZ4_*, LZ4F_*,
# XXH*) into every OCaml program, so that a program whose C stubs define
# or link an lz4 of their own would no longer link, or would silently get
# ours.  Instead this script makes one relocatable object OUT holding the
# members of the system's liblz4.a that the runtime needs, every global
# symbol they define renamed caml_lz4_NAME: the runtime then adds nothing
# outside caml_* (upstream's tools/check-symbol-names), and a program may
# define or link any lz4.
#
# The entry points the runtime calls are those that caml/memprof_symbols.h
# renames (`#define LZ4F_x caml_lz4_LZ4F_x`); that header is the one list.
# Debian's liblz4.a is position-independent, so OUT serves the static and
# the shared runtimes alike.
set -eu
cc=$1; out=$2
here=$(dirname "$0")
die() { echo "memprof_lz4_private.sh: $*" >&2; exit 1; }

archive=$($cc -print-file-name=liblz4.a)
case $archive in
  /*) [ -f "$archive" ] || die "$archive: no such file";;
  *) die "liblz4.a not found by $cc: install liblz4's static library (Debian: liblz4-dev)";;
esac

entries=$(sed -n 's/^#define \(LZ4F\{0,1\}_[A-Za-z0-9_]*\) caml_lz4_\1$/\1/p' \
  "$here/caml/memprof_symbols.h")
[ -n "$entries" ] || die "no lz4 entry point in caml/memprof_symbols.h"

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT INT TERM
# A relocatable link of the archive pulls exactly the members that define
# the entry points, and those their definitions need.
undefs=
for e in $entries; do undefs="$undefs -Wl,-u,$e"; done
# shellcheck disable=SC2086
$cc -r -nostdlib -o "$tmp/lz4.o" $undefs "$archive" ||
  die "relocatable link of $archive failed"
for e in $entries; do
  nm -P --defined-only "$tmp/lz4.o" | grep -q "^$e T" ||
    die "$archive does not define $e"
done
nm -P -g --defined-only "$tmp/lz4.o" |
  awk '{ print $1 " caml_lz4_" $1 }' > "$tmp/renames"
objcopy --redefine-syms="$tmp/renames" "$tmp/lz4.o" "$tmp/out.o"
mv "$tmp/out.o" "$out"

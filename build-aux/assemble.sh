#!/bin/sh
# assemble.sh PRISTINE TOP STAGE
#
# Build the $OCAML_VERSION+memprof source tree (5.3.0 by default) in STAGE
# from the pristine upstream tree PRISTINE and our files in TOP:
#   1. copy the pristine tree;
#   2. add our own new files (runtime/*.c, runtime/*.sh, runtime/caml/*.h,
#      stdlib-patches/*.ml*);
#   3. apply the version's patch series (runtime/patches/VERSION/series, then
#      stdlib-patches/VERSION/series) with `patch --fuzz=0`: a hunk that does
#      not apply exactly is an error naming the patch;
#   4. regenerate upstream's configure with autoconf (tools/autogen).
# The caller syncs STAGE into the build tree by content, so that files that
# did not change keep their timestamps and the OCaml build stays incremental.
set -eu
pristine=$1; top=$2; stage=$3
version=${OCAML_VERSION:-5.3.0}
die() { echo "assemble: $*" >&2; exit 1; }

rm -rf "$stage"; mkdir -p "$stage"
(cd "$pristine" && tar -cf - .) | (cd "$stage" && tar -xf -)
# npm's additions are not part of the release.
rm -f "$stage/package.json" "$stage/setup-flexdll"

for f in "$top"/runtime/*.c "$top"/runtime/*.sh; do cp "$f" "$stage/runtime/"; done
for f in "$top"/runtime/caml/*.h; do cp "$f" "$stage/runtime/caml/"; done
for f in "$top"/stdlib-patches/*.ml "$top"/stdlib-patches/*.mli; do
  [ -e "$f" ] && cp "$f" "$stage/stdlib/"
done

apply_series() { # directory holding a `series` file
  [ -f "$1/series" ] || return 0
  grep -v -e '^#' -e '^[[:space:]]*$' "$1/series" | while read -r p; do
    [ -f "$1/$p" ] || die "$1/series names $p, which does not exist"
    out=$(patch -d "$stage" -p1 --fuzz=0 --no-backup-if-mismatch -s < "$1/$p" 2>&1) ||
      die "patch $1/$p does not apply to pristine $version: $out"
    # patch may succeed with offsets; only exact context is accepted.
    case "$out" in *Hunk*|*offset*) die "patch $1/$p applied only approximately: $out";; esac
  done
}
[ -f "$top/runtime/patches/$version/series" ] || die "no patch series for OCaml $version (runtime/patches/$version/series)"
apply_series "$top/runtime/patches/$version"
apply_series "$top/stdlib-patches/$version"

command -v autoconf >/dev/null 2>&1 || die "autoconf (2.71) is needed to regenerate configure"
(cd "$stage" && tools/autogen >/dev/null 2>&1) ||
  die "autoconf failed on the patched configure.ac: $(cd "$stage" && autoconf --force 2>&1 | head -n 5)"
rm -rf "$stage/autom4te.cache" "$stage/configure~"

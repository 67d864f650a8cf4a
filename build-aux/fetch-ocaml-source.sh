#!/bin/sh
# fetch-ocaml-source.sh SOURCE CACHE_DIR DEST_DIR
#
# Produce a pristine upstream OCaml 5.3.0 source tree in DEST_DIR.
#
# SOURCE is "npm" (default: `npm pack ocaml@5.3.0`, cached in CACHE_DIR so
# that later builds need no network), a tarball (.tgz/.tar.gz/.tar.xz/.tbz),
# or a directory holding an extracted 5.3.0 tree.  Tarballs must match one of
# the pinned digests below; directories must carry the pinned digests of the
# upstream files our patch series touches.  Nothing unverified is ever built.
set -eu

src=${1:-npm}; cache=$2; dest=$3

# The npm package is the upstream release plus package.json/setup-flexdll.
NPM_SHA256=c4108bac7b45c46325f0e15a988c308f7785cd6c4d29dac190df06f543f7c992
NPM_SHA512_B64='D0uG44Q3r6LY4wSzhBZpHe+q1yMJ4QHgk5R1Osv7qLWBgWPQ2jE60vY6rXgJraL/H9fvsWOF3KZSIro/bS+Z8A=='
# The pristine release tarball as Debian 13 carries it (ocaml_5.3.0.orig.tar.xz).
ORIG_XZ_SHA256=b0229336d9ebe0af905954bcd1ae5b293306bbcb08c01ead03500d9e5bc90164

here=$(cd "$(dirname "$0")" && pwd)
die() { echo "fetch-ocaml-source: $*" >&2; exit 1; }

sha512_b64() { sha512sum "$1" | cut -d' ' -f1 | xxd -r -p | base64 -w0; }

verify_tarball() {
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  case "$sum" in
    "$NPM_SHA256")
      [ "$(sha512_b64 "$1")" = "$NPM_SHA512_B64" ] ||
        die "$1: sha512 integrity mismatch (expected sha512-$NPM_SHA512_B64)";;
    "$ORIG_XZ_SHA256") ;;
    *) die "$1: not a pristine OCaml 5.3.0 release tarball: sha256 is $sum, expected $NPM_SHA256 (npm package ocaml@5.3.0) or $ORIG_XZ_SHA256 (ocaml_5.3.0.orig.tar.xz)";;
  esac
}

# Files touched by the patch series, with their pristine digests: a source
# directory is accepted only if these match (recorded by build-aux/pin-digests).
verify_directory() {
  [ -f "$1/VERSION" ] && [ "$(head -n1 "$1/VERSION")" = "5.3.0" ] ||
    die "$1: not an OCaml 5.3.0 source tree (VERSION does not read 5.3.0)"
  (cd "$1" && sha256sum --quiet -c "$here/upstream-digests.sha256") >/dev/null 2>&1 ||
    die "$1: upstream files differ from pristine 5.3.0 (checked against build-aux/upstream-digests.sha256): $(cd "$1" && sha256sum --quiet -c "$here/upstream-digests.sha256" 2>&1 | head -n 3 | tr '\n' ' ')"
}

extract() { # tarball -> $dest, stripping the single top directory
  tmp="$dest.tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
  tar -xf "$1" -C "$tmp" --strip-components=1 || die "$1: cannot extract"
  rm -rf "$dest"; mv "$tmp" "$dest"
}

case "$src" in
  npm)
    mkdir -p "$cache"
    tgz="$cache/ocaml-5.3.0.tgz"
    if [ ! -f "$tgz" ]; then
      command -v npm >/dev/null 2>&1 ||
        die "npm is needed to fetch ocaml@5.3.0 (or pass --with-ocaml-source=TARBALL|DIR)"
      echo "fetch-ocaml-source: npm pack ocaml@5.3.0 into $cache"
      (cd "$cache" && npm pack ocaml@5.3.0 --silent >/dev/null) ||
        die "npm pack ocaml@5.3.0 failed (no network? pass --with-ocaml-source=TARBALL|DIR)"
    fi
    verify_tarball "$tgz"; extract "$tgz";;
  *)
    [ -e "$src" ] || die "$src: no such file or directory"
    if [ -d "$src" ]; then
      verify_directory "$src"
      rm -rf "$dest.tmp"; mkdir -p "$dest.tmp"
      (cd "$src" && tar --exclude=.git -cf - .) | tar -xf - -C "$dest.tmp"
      rm -rf "$dest"; mv "$dest.tmp" "$dest"
    else
      verify_tarball "$src"; extract "$src"
    fi;;
esac
# Whatever the origin, the tree we patch must be 5.3.0's.
verify_directory "$dest"
echo "fetch-ocaml-source: pristine OCaml 5.3.0 in $dest"

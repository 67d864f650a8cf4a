#!/bin/sh
# fetch-ocaml-source.sh SOURCE CACHE_DIR DEST_DIR
#
# Produce a pristine upstream OCaml source tree in DEST_DIR, for the release
# named by $OCAML_VERSION (5.3.0, the default, or 5.4.1).
#
# SOURCE is "fetch" (or "npm", its old name): download the release once into
# CACHE_DIR, so that later builds need no network:
#   5.3.0  `npm pack ocaml@5.3.0`;
#   5.4.1  Debian sid's source package `ocaml` 5.4.1-N: its orig tarball is
#          upstream's ocaml-5.4.1.tar.xz (the package's watch file takes it
#          from the OCaml distribution site; Debian's own changes live in a
#          separate .debian.tar.xz, which is never used).  Downloaded with a
#          private apt configuration naming the Debian mirror of this
#          machine's apt sources; the system's sources are left untouched.
# or a tarball (.tgz/.tar.gz/.tar.xz/.tbz), or a directory holding an
# extracted tree.  Tarballs must match one of the pinned digests below;
# directories must carry the pinned digests of the upstream files our patch
# series touches (build-aux/upstream-digests-VERSION.sha256).  Nothing
# unverified is ever built.
set -eu

src=${1:-fetch}; cache=$2; dest=$3
version=${OCAML_VERSION:-5.3.0}

here=$(cd "$(dirname "$0")" && pwd)
die() { echo "fetch-ocaml-source: $*" >&2; exit 1; }

# ---- pinned digests, per version -------------------------------------------
NPM_SHA256=; NPM_SHA512_B64=
case "$version" in
  5.3.0)
    # The npm package is the upstream release plus package.json/setup-flexdll.
    NPM_SHA256=c4108bac7b45c46325f0e15a988c308f7785cd6c4d29dac190df06f543f7c992
    NPM_SHA512_B64='D0uG44Q3r6LY4wSzhBZpHe+q1yMJ4QHgk5R1Osv7qLWBgWPQ2jE60vY6rXgJraL/H9fvsWOF3KZSIro/bS+Z8A=='
    # The pristine release tarball as Debian 13 carries it (ocaml_5.3.0.orig.tar.xz).
    ORIG_XZ_SHA256=b0229336d9ebe0af905954bcd1ae5b293306bbcb08c01ead03500d9e5bc90164
    cached=ocaml-5.3.0.tgz;;
  5.4.1)
    # ocaml_5.4.1.orig.tar.xz (4,483,716 bytes) as listed in Debian sid's
    # Sources index for `ocaml` 5.4.1-1.
    ORIG_XZ_SHA256=b1e297adc186635540758eb064c7fab025598ae4436f3b9767e5025188b4e0ab
    cached=ocaml_5.4.1.orig.tar.xz;;
  *) die "OCaml $version is not supported (5.3.0 or 5.4.1)";;
esac
digests="$here/upstream-digests-$version.sha256"

sha512_b64() { sha512sum "$1" | cut -d' ' -f1 | xxd -r -p | base64 -w0; }

verify_tarball() {
  sum=$(sha256sum "$1" | cut -d' ' -f1)
  case "$sum" in
    "$ORIG_XZ_SHA256") ;;
    "$NPM_SHA256")
      [ -n "$NPM_SHA256" ] || die "$1: empty digest"
      [ "$(sha512_b64 "$1")" = "$NPM_SHA512_B64" ] ||
        die "$1: sha512 integrity mismatch (expected sha512-$NPM_SHA512_B64)";;
    *) if [ -n "$NPM_SHA256" ]; then
         die "$1: not a pristine OCaml $version release tarball: sha256 is $sum, expected $NPM_SHA256 (npm package ocaml@$version) or $ORIG_XZ_SHA256 (ocaml_$version.orig.tar.xz)"
       else
         die "$1: not a pristine OCaml $version release tarball: sha256 is $sum, expected $ORIG_XZ_SHA256 (ocaml_$version.orig.tar.xz)"
       fi;;
  esac
}

# Files touched by the patch series, with their pristine digests: a source
# directory is accepted only if these match (recorded by `make pin-digests`).
verify_directory() {
  [ -f "$1/VERSION" ] && [ "$(head -n1 "$1/VERSION")" = "$version" ] ||
    die "$1: not an OCaml $version source tree (VERSION does not read $version)"
  [ ! -d "$1/debian" ] || die "$1: has a debian/ directory: not the pristine release tree"
  (cd "$1" && sha256sum --quiet -c "$digests") >/dev/null 2>&1 ||
    die "$1: upstream files differ from pristine $version (checked against build-aux/$(basename "$digests")): $(cd "$1" && sha256sum --quiet -c "$digests" 2>&1 | head -n 3 | tr '\n' ' ')"
}

extract() { # tarball -> $dest, stripping the single top directory
  top=$(tar -tf "$1" 2>/dev/null | cut -d/ -f1 | sort -u) || die "$1: cannot list"
  [ "$(echo "$top" | wc -l)" = 1 ] || die "$1: more than one top directory"
  tmp="$dest.tmp"; rm -rf "$tmp"; mkdir -p "$tmp"
  tar -xf "$1" -C "$tmp" --strip-components=1 || die "$1: cannot extract"
  rm -rf "$dest"; mv "$tmp" "$dest"
}

. "$here/debian-mirror.sh"   # system_debian_mirror

# Debian sid's orig tarball of `ocaml` $version, into $1.  The mirror serves
# the orig and debian tarballs but answers 404 for the .dsc, so apt-get
# exits non-zero even when the tarball arrived: its digest decides.
fetch_debian_orig() {
  out=$1
  hint="without network, pass --with-ocaml-source=ocaml_$version.orig.tar.xz (or an extracted tree)"
  command -v apt-get >/dev/null 2>&1 || die "apt-get is needed to fetch OCaml $version; $hint"
  mirror=${DEBIAN_MIRROR:-$(system_debian_mirror)}
  [ -n "$mirror" ] || die "no Debian mirror in the apt sources; set DEBIAN_MIRROR; $hint"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/src" "$work/parts"
  echo "deb-src [trusted=yes] $mirror sid main" > "$work/sources.list"
  set -- -o Dir::Etc::sourcelist="$work/sources.list" \
    -o Dir::Etc::sourceparts="$work/parts" -o Dir::State::Lists="$work/lists" \
    -o APT::Sandbox::User="$(id -un)" -o Debug::NoLocking=1 -q
  echo "fetch-ocaml-source: downloading OCaml $version (Debian sid's source package ocaml) from $mirror"
  apt-get "$@" update > "$work/log" 2>&1 ||
    { tail -n 5 "$work/log" >&2; rm -rf "$work"; die "apt-get update (Debian sid sources) failed; $hint"; }
  # Any Debian revision of this upstream version carries the same orig tarball.
  debver=$(apt-cache "$@" showsrc ocaml 2>/dev/null | sed -n "s/^Version: \($version-[0-9.]*\)\$/\1/p" | head -n 1)
  [ -n "$debver" ] || { rm -rf "$work"; die "Debian sid no longer has ocaml $version-*; $hint"; }
  (cd "$work/src" && apt-get "$@" source --download-only "ocaml=$debver") >> "$work/log" 2>&1 || true
  orig="$work/src/ocaml_$version.orig.tar.xz"
  [ -f "$orig" ] || { tail -n 5 "$work/log" >&2; rm -rf "$work"; die "ocaml_$version.orig.tar.xz did not arrive; $hint"; }
  mv "$orig" "$out"
  rm -rf "$work"
}

case "$src" in
  fetch|npm)
    mkdir -p "$cache"
    tarball="$cache/$cached"
    if [ ! -f "$tarball" ]; then
      case "$version" in
        5.3.0)
          command -v npm >/dev/null 2>&1 ||
            die "npm is needed to fetch ocaml@5.3.0 (or pass --with-ocaml-source=TARBALL|DIR)"
          echo "fetch-ocaml-source: npm pack ocaml@5.3.0 into $cache"
          (cd "$cache" && npm pack ocaml@5.3.0 --silent >/dev/null) ||
            die "npm pack ocaml@5.3.0 failed (no network? pass --with-ocaml-source=TARBALL|DIR)";;
        *)
          fetch_debian_orig "$tarball.part"
          verify_tarball "$tarball.part"
          mv "$tarball.part" "$tarball";;
      esac
    fi
    verify_tarball "$tarball"; extract "$tarball";;
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
# Whatever the origin, the tree we patch must be $version's.
verify_directory "$dest"
echo "fetch-ocaml-source: pristine OCaml $version in $dest"

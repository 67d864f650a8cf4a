#!/bin/sh
# prepare-mirror.sh DIST_TARBALL... OUTDIR
#
# Turns the opam repository template next to this script (repo, packages/)
# into a repository opam can build from with no network:
#
#   OUTDIR/repo/     the opam repository: the template's packages, plus each
#                    compiler package's url section (the distribution tarball
#                    ocaml-VERSION+memprof.tar.gz given for it, and its
#                    sha256; a compiler with no tarball given is left out),
#                    and a `repo` file whose archive-mirrors points at
#                    OUTDIR/mirror;
#   OUTDIR/mirror/   an archive mirror: every source archive stored as
#                    sha256/<first 2 hex digits>/<sha256>, which is where opam
#                    looks first for a url whose first checksum is that sha256.
#
# The URLs in the opam files name a placeholder host (*.invalid never
# resolves): archives are only ever found through the mirror, by checksum.
#
# dune's source is the orig tarball of Debian 13's ocaml-dune source package
# (the same bytes as dune's upstream dune-3.17.2.tbz), downloaded once into
# the cache directory and checked against the sha256 in dune's opam file.
#
# Environment:
#   MEMPROF_CACHE  cache directory (default: ${XDG_CACHE_HOME:-~/.cache}/ocaml-memprof)
#   DUNE_TARBALL   use this file as dune's source instead of downloading it
#   DEBIAN_MIRROR  Debian mirror to download from (default: the first one in
#                  this machine's apt sources)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
prog=prepare-mirror.sh

die() {
  echo "$prog: $*" >&2
  exit 1
}

[ $# -ge 2 ] || {
  echo "usage: $prog DIST_TARBALL... OUTDIR" >&2
  exit 2
}
dists=
while [ $# -gt 1 ]; do
  [ -f "$1" ] || die "distribution tarball $1 not found (run 'make dist' first)"
  case $(basename "$1") in
    ocaml-*+memprof.tar.gz) ;;
    *) die "$1: expected a file named ocaml-VERSION+memprof.tar.gz (from make dist)";;
  esac
  dists="$dists $1"
  shift
done
out=$1

dune_version=3.17.2
dune_opam="$here/packages/dune/dune.$dune_version/opam"
cache=${MEMPROF_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ocaml-memprof}

sha256() { sha256sum "$1" | cut -d' ' -f1; }

# The first sha256 listed in an opam file's url section.
url_sha256() {
  sed -n 's/.*"sha256=\([0-9a-f]\{64\}\)".*/\1/p' "$1" | head -n 1
}

. "$here/../build-aux/debian-mirror.sh"   # system_debian_mirror

# Downloads the ocaml-dune source package from Debian 13 (trixie) with a
# private apt configuration: the system's sources, lists and cache are left
# untouched. Leaves the orig tarball in $1.
fetch_dune_from_debian() {
  dest=$1
  hint="without network, put dune-$dune_version.tbz in $cache or set DUNE_TARBALL"
  mirror=${DEBIAN_MIRROR:-$(system_debian_mirror)}
  [ -n "$mirror" ] ||
    die "no Debian mirror found in the apt sources; set DEBIAN_MIRROR; $hint"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/src"
  keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  echo "deb-src [signed-by=$keyring] $mirror trixie main" > "$work/sources.list"
  set -- -o Dir::Etc::sourcelist="$work/sources.list" \
    -o Dir::Etc::sourceparts=/nonexistent \
    -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" \
    -o APT::Sandbox::User="$(id -un)" -o Debug::NoLocking=1 -q
  echo "$prog: downloading dune's source (Debian 13 ocaml-dune) from $mirror"
  apt-get "$@" update > "$work/log" 2>&1 ||
    { cat "$work/log" >&2; rm -rf "$work"; die "apt-get update (Debian 13 sources) failed; $hint"; }
  (cd "$work/src" && apt-get "$@" source --download-only ocaml-dune) >> "$work/log" 2>&1 ||
    { cat "$work/log" >&2; rm -rf "$work"; die "apt-get source ocaml-dune failed (no network?); $hint"; }
  orig="$work/src/ocaml-dune_$dune_version.orig.tar.bz2"
  [ -f "$orig" ] || {
    ls "$work/src" >&2
    rm -rf "$work"
    die "Debian 13's ocaml-dune is no longer version $dune_version; set DUNE_TARBALL to dune-$dune_version.tbz"
  }
  mv "$orig" "$dest"
  rm -rf "$work"
}

# --- dune's source, cached -------------------------------------------------
dune_sha=$(url_sha256 "$dune_opam")
[ -n "$dune_sha" ] || die "no sha256 in $dune_opam"
dune_cached="$cache/dune-$dune_version.tbz"
if [ -n "${DUNE_TARBALL:-}" ]; then
  dune_src=$DUNE_TARBALL
  [ -f "$dune_src" ] || die "DUNE_TARBALL=$dune_src: no such file"
else
  if [ ! -f "$dune_cached" ]; then
    mkdir -p "$cache"
    fetch_dune_from_debian "$dune_cached.part"
    mv "$dune_cached.part" "$dune_cached"
  fi
  dune_src=$dune_cached
fi
got=$(sha256 "$dune_src")
[ "$got" = "$dune_sha" ] ||
  die "$dune_src has sha256 $got, dune's opam file expects $dune_sha"

# --- the template's own files must match the checksums it declares ---------
for opam in "$here"/packages/*/*/opam; do
  dir=$(dirname "$opam")
  sed -n 's/^[[:space:]]*\["\([^"]*\)" "sha256=\([0-9a-f]*\)"\]/\1 \2/p' "$opam" |
    while read -r file sum; do
      [ -f "$dir/files/$file" ] || die "$opam names extra file $file, missing from $dir/files"
      [ "$(sha256 "$dir/files/$file")" = "$sum" ] ||
        die "$dir/files/$file does not match its sha256 in $opam (update the opam file)"
    done
done

# --- repository and mirror -------------------------------------------------
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/repo" "$out/mirror"
mkdir -p "$out/repo" "$out/mirror"

add_to_mirror() {
  sum=$(sha256 "$1")
  mkdir -p "$out/mirror/sha256/$(echo "$sum" | cut -c1-2)"
  cp "$1" "$out/mirror/sha256/$(echo "$sum" | cut -c1-2)/$sum"
  echo "$sum"
}

add_to_mirror "$dune_src" > /dev/null

cp -R "$here/packages" "$out/repo/packages"
cat > "$out/repo/repo" <<EOF
opam-version: "2.0"
archive-mirrors: "file://$out/mirror"
EOF

# Each compiler whose tarball was given gets its url; the others go.
summary=
for dir in "$out"/repo/packages/ocaml-variants/ocaml-variants.*+memprof; do
  compiler_version=${dir##*/ocaml-variants.}
  dist=
  for d in $dists; do
    [ "$(basename "$d")" = "ocaml-$compiler_version.tar.gz" ] && dist=$d
  done
  if [ -z "$dist" ]; then rm -rf "$dir"; continue; fi
  dist_sha=$(add_to_mirror "$dist")
  cat >> "$dir/opam" <<EOF
url {
  src: "https://archive-mirror.invalid/ocaml-$compiler_version.tar.gz"
  checksum: "sha256=$dist_sha"
}
EOF
  summary="$summary $compiler_version (sha256 $dist_sha)"
done
[ -n "$summary" ] || die "no tarball given matches a compiler package of the template"

# opam lint rejects what opam would misread (its errors, not warnings, fail).
for opam in "$out"/repo/packages/*/*/opam; do
  if ! lint=$(OPAMROOTISOK=1 opam lint "$opam" 2>&1); then
    echo "$lint" >&2
    die "opam lint failed on $opam"
  fi
done

echo "$prog: repository $out/repo, compilers:$summary, mirror $out/mirror"

#!/bin/bash
# testsuite/lwt/build-lwt.sh PREFIX WORKDIR
#
# Build the real-Lwt test programs (testsuite/lwt/*.ml) with the compiler
# installed in PREFIX, in a dune workspace WORKDIR/ws, without opam or
# findlib.  Upstream sources are Debian's orig tarballs (the upstream
# release tarballs), fetched once into the cache
# ${OCAML_MEMPROF_LWT_CACHE:-${XDG_CACHE_HOME:-~/.cache}/ocaml-memprof/lwt-test}
# and checked against the sha256 pinned below (as Debian's Sources indices
# state them); nothing unverified is built:
#   dune 3.17.2        Debian 13 `ocaml-dune` (bootstrapped with PREFIX's
#                      compiler, `ocaml boot/bootstrap.ml`, kept in the cache;
#                      on OCaml 5.4 with the project's two one-line fixes,
#                      opam-switch/packages/dune/dune.3.17.2/files/)
#   lwt 5.6.1          Debian 12 `lwt`
#   cppo 1.8.0, ocplib-endian 1.2   Debian 13
# dune-configurator (and its csexp) come from dune's own source.  Two shims
# stand in for findlib names: an empty library `bytes` (findlib's
# compatibility package, which Lwt core and ocplib-endian name) and Lwt's
# `dune.configurator`, renamed `dune-configurator`.
#
# Exit 0 with the programs in WORKDIR/ws/_build/default/programs/ (and
# the .cmt files of the programs, Lwt and ocplib-endian); 77 when
# a source is missing from the cache and cannot be downloaded (no network:
# the caller counts the suite as skipped); 1 on any other failure, with a
# one-line reason on stderr.
set -eu
PREFIX=$(cd "$1" && pwd); WORK=$2
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
CACHE=${OCAML_MEMPROF_LWT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ocaml-memprof/lwt-test}
export PATH="$PREFIX/bin:$PATH"
unset OCAMLRUNPARAM CAMLRUNPARAM OCAMLPATH OCAMLFIND_CONF
die() { echo "build-lwt: $*" >&2; exit 1; }
skip() { echo "build-lwt: $*" >&2; exit 77; }

# package  version  Debian suite  orig file  sha256
SOURCES="
ocaml-dune 3.17.2 trixie ocaml-dune_3.17.2.orig.tar.bz2 9deafeed0ecfe9e65e642cd8e6197f0864f73fcd7b94b5b199ae4d2e07a2ea64
lwt 5.6.1 bookworm lwt_5.6.1.orig.tar.gz eb49470d2e18492f2502f69012066001f8a5384d4ca0a75000a8a8659f8a67a0
cppo 1.8.0 trixie cppo_1.8.0.orig.tar.gz 6e62a8ee0217c9cc38d5860110eb18eb8d89c05c420353d298e1431fe8bac00f
ocplib-endian 1.2 trixie ocplib-endian_1.2.orig.tar.gz 97ae74e8aeead46a0475df14af637ce78e2372c07258619ad8967506f2d4b320
"

. "$here/../../build-aux/debian-mirror.sh"   # system_debian_mirror

# Download the orig tarballs missing from $CACHE/dist with a private apt
# configuration (the system's sources untouched).  The mirror may answer
# 404 for a .dsc or .debian.tar.xz, making apt-get fail although the orig
# file arrived: the digest decides, not apt's status.
fetch_missing() {
  local missing=$1 work mirror pkg ver suite file sum debver
  command -v apt-get > /dev/null 2>&1 || skip "apt-get is needed to download$missing into $CACHE/dist"
  mirror=${DEBIAN_MIRROR:-$(system_debian_mirror)}
  [ -n "$mirror" ] || skip "no Debian mirror in the apt sources (set DEBIAN_MIRROR) to download$missing"
  work=$(mktemp -d)
  mkdir -p "$work/lists/partial" "$work/parts" "$work/src"
  printf 'deb-src [trusted=yes] %s %s main\n' "$mirror" bookworm "$mirror" trixie > "$work/sources.list"
  set -- -o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts="$work/parts" \
    -o Dir::State::Lists="$work/lists" -o APT::Sandbox::User="$(id -un)" -o Debug::NoLocking=1 -q
  echo "build-lwt: downloading$missing (Debian source packages) from $mirror"
  # apt-get update can exit 0 having fetched nothing (its failures to
  # fetch are warnings): the Sources indices tell.
  if ! apt-get "$@" update > "$work/log" 2>&1 || ! ls "$work/lists/"*Sources* > /dev/null 2>&1; then
    rm -rf "$work"; skip "cannot download$missing (apt-get update got no Sources index: no network?); cache: $CACHE/dist"
  fi
  echo "$SOURCES" | while read -r pkg ver suite file sum; do
    [ -n "$pkg" ] && [ ! -f "$CACHE/dist/$file" ] || continue
    debver=$(apt-cache "$@" showsrc "$pkg" 2>/dev/null | sed -n "s/^Version: \($ver-[0-9.]*\)\$/\1/p" | head -n 1)
    [ -n "$debver" ] || { echo "build-lwt: no $pkg $ver-* in Debian's sources" >&2; continue; }
    (cd "$work/src" && apt-get "$@" source --download-only "$pkg=$debver") >> "$work/log" 2>&1 || true
    [ -f "$work/src/$file" ] && mv "$work/src/$file" "$CACHE/dist/$file.part"
  done
  rm -rf "$work"
}

verify() { # FILE SHA256
  local got
  got=$(sha256sum "$1" | cut -d' ' -f1)
  [ "$got" = "$2" ] || { rm -f "$1"; die "$(basename "$1"): sha256 is $got, expected $2 (removed from the cache)"; }
}

mkdir -p "$CACHE/dist"
missing=
while read -r pkg ver suite file sum; do
  [ -n "$pkg" ] && [ ! -f "$CACHE/dist/$file" ] && missing="$missing $file"
done <<< "$SOURCES"
[ -z "$missing" ] || fetch_missing "$missing"
while read -r pkg ver suite file sum; do
  [ -n "$pkg" ] || continue
  if [ -f "$CACHE/dist/$file.part" ]; then verify "$CACHE/dist/$file.part" "$sum"; mv "$CACHE/dist/$file.part" "$CACHE/dist/$file"; fi
  [ -f "$CACHE/dist/$file" ] || skip "$file is not in $CACHE/dist and could not be downloaded"
  verify "$CACHE/dist/$file" "$sum"
done <<< "$SOURCES"

extract() { # TARBALL DEST: the single top directory's contents
  rm -rf "$2" "$2.tmp"; mkdir -p "$2.tmp"
  tar -xf "$1" -C "$2.tmp" --strip-components=1 || die "$1: cannot extract"
  mv "$2.tmp" "$2"
}

# ---- dune, bootstrapped once per compiler version -------------------------
ocaml_version=$(ocamlopt -version) || die "no ocamlopt in $PREFIX/bin"
DUNE_SRC=$CACHE/dune-3.17.2-ocaml-$ocaml_version
DUNE=$DUNE_SRC/_boot/dune.exe
if [ ! -x "$DUNE" ]; then
  extract "$CACHE/dist/ocaml-dune_3.17.2.orig.tar.bz2" "$DUNE_SRC"
  case "$ocaml_version" in
    5.4.*) patch -s -d "$DUNE_SRC" -p1 < "$top/opam-switch/packages/dune/dune.3.17.2/files/ocaml-5.4-stdlib.patch" ||
             die "the 5.4 stdlib fixes do not apply to dune 3.17.2";;
  esac
  echo "build-lwt: bootstrapping dune 3.17.2 with OCaml $ocaml_version (about 2 minutes)"
  (cd "$DUNE_SRC" && ocaml boot/bootstrap.ml) > "$DUNE_SRC.log" 2>&1 ||
    { rm -f "$DUNE"; die "dune bootstrap failed (see $DUNE_SRC.log)"; }
fi
[ -x "$DUNE" ] || die "dune bootstrap left no $DUNE"

# ---- the workspace ----------------------------------------------------------
WS=$WORK/ws
rm -rf "$WS"; mkdir -p "$WS/vendor" "$WS/shims/bytes" "$WS/programs"
extract "$CACHE/dist/lwt_5.6.1.orig.tar.gz" "$WS/vendor/lwt"
extract "$CACHE/dist/cppo_1.8.0.orig.tar.gz" "$WS/vendor/cppo"
extract "$CACHE/dist/ocplib-endian_1.2.orig.tar.gz" "$WS/vendor/ocplib-endian"
mkdir -p "$WS/vendor/dune-configurator"
cp -R "$DUNE_SRC/otherlibs/configurator/src" "$WS/vendor/dune-configurator/src"
mkdir -p "$WS/vendor/dune-configurator/csexp"
cp "$DUNE_SRC"/vendor/csexp/src/csexp.ml* "$WS/vendor/dune-configurator/csexp/"
# dune's tree gives csexp the public name stdune.csexp; here it belongs
# to the package that uses it.
echo '(library (name csexp) (public_name dune-configurator.csexp))' > "$WS/vendor/dune-configurator/csexp/dune"
printf '(lang dune 3.0)\n(package (name dune-configurator))\n' > "$WS/vendor/dune-configurator/dune-project"
# Shim 2: findlib's name of dune-configurator.
sed -i 's/dune\.configurator/dune-configurator/' "$WS/vendor/lwt/src/unix/config/dune"
# Shim 1: findlib's empty compatibility package `bytes`.
printf '(lang dune 3.0)\n(package (name bytes))\n' > "$WS/shims/bytes/dune-project"
echo '(library (name bytes) (public_name bytes) (wrapped false) (modules))' > "$WS/shims/bytes/dune"
printf '(lang dune 3.0)\n' > "$WS/dune-project"
echo '(vendored_dirs vendor)' > "$WS/dune"
cp "$here"/*.ml "$WS/programs/"
programs=$(cd "$here" && ls leak_*.ml | sed 's/\.ml$//' | tr '\n' ' ')
cat > "$WS/programs/dune" <<EOF
(executables
 (names $programs)
 (ocamlopt_flags (:standard -g))
 (libraries lwt lwt.unix))
EOF
targets=$(for p in $programs; do printf ' programs/%s.exe' "$p"; done)
# The .cmt files, for `--by type` and typed retainer paths: dune writes
# them with the bytecode objects, which native programs do not need, so
# its @check alias builds them: the programs' and those of the libraries
# they link (named directory by directory: a recursive alias does not
# enter vendored directories).
cmt_libs="vendor/lwt/src/core vendor/lwt/src/unix vendor/ocplib-endian/src"
checks="@programs/check$(for d in $cmt_libs; do printf ' @@%s/check' "$d"; done)"
(cd "$WS" && "$DUNE" build --root . $targets $checks) > "$WORK/dune-build.log" 2>&1 ||
  die "dune build of Lwt and the programs failed (see $WORK/dune-build.log: $(grep -m1 -i error "$WORK/dune-build.log"))"
for cmt in 'programs/.*.eobjs/byte/dune__exe__Leak_table.cmt' vendor/lwt/src/core/.lwt.objs/byte/lwt.cmt; do
  compgen -G "$WS/_build/default/$cmt" > /dev/null || die "dune @check left no _build/default/$cmt"
done
echo "build-lwt: built$targets and the .cmt files ($checks) with Lwt 5.6.1 on OCaml $ocaml_version"

#!/bin/bash
# install-deps.sh [--tests] [--tsan]: install the Debian 12 packages the build
# needs (and, with --tests, those the tests use; with --tsan, libunwind-dev
# for `make tsan`).  Run as root or with sudo.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
# build: C toolchain, autoconf 2.71 (regenerates upstream's configure),
# liblz4 (linked into the runtime), rsync/xxd (assembly, digest checks)
pkgs="gcc libc6-dev make patch autoconf rsync tar xz-utils xxd ca-certificates liblz4-dev zlib1g-dev"
# tests: lz4 CLI, python3 (memtrace CTF checker), golang-go (go tool pprof),
# clang (libFuzzer), chromium (flame graph rendering), opam (switch test),
# bzip2 (dune's source for the Lwt suite)
for opt in "$@"; do
  case "$opt" in
    --tests) pkgs="$pkgs lz4 python3 golang-go clang chromium opam procps time valgrind bzip2";;
    # make tsan: upstream's --enable-tsan links libunwind (the nongnu one:
    # LLVM's libunwind-14-dev lacks -lunwind-x86_64 and conflicts with it)
    --tsan) pkgs="$pkgs libunwind-dev";;
  esac
done
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $pkgs > /dev/null
# npm fetches pristine OCaml 5.3.0; the machine image ships Node.js with npm,
# Debian's is the fallback.
command -v npm > /dev/null || $SUDO apt-get install -y -qq npm > /dev/null
echo "install-deps: done"

#!/bin/bash
# testsuite/lwt.sh PREFIX: the tools on real Lwt programs (issue 30).
# testsuite/lwt/build-lwt.sh builds Lwt 5.6.1 and the leak programs
# (testsuite/lwt/leak_*.ml) with the compiler in PREFIX, from Debian's
# orig tarballs (sha256 pinned, cached); testsuite/lwt/check.py traces
# them and checks what ocaml-memprof says (leaks, retainers, the report's
# race flag, lwt) against what the programs measure.  Without network and
# with an empty cache the suite is skipped, not failed.
# Last line: "N passed, N failed[, 1 skipped]".
set -u
PREFIX=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
top=$(dirname "$here")
W=${TEST_WORKDIR:-${MEMPROF_BUILD_DIR:-$top/_build}/tests}/lwt
rm -rf "$W"; mkdir -p "$W"
# OCAML_MEMPROF: the tools to test (default: PREFIX's, else the tree's).
MP=${OCAML_MEMPROF:-$PREFIX/bin/ocaml-memprof}
[ -x "$MP" ] || MP=$top/tools/ocaml-memprof
"$here/lwt/build-lwt.sh" "$PREFIX" "$W"
rc=$?
if [ $rc -eq 77 ]; then
  echo "skip lwt: Lwt's sources are not cached and cannot be downloaded (see above)"
  echo "0 passed, 0 failed, 1 skipped"
  exit 0
elif [ $rc -ne 0 ]; then
  echo "FAIL build of Lwt 5.6.1 and the leak programs"
  echo "0 passed, 1 failed"
  exit 1
fi
echo "ok   build of Lwt 5.6.1 and the leak programs"
PATH="$PREFIX/bin:$PATH" python3 "$here/lwt/check.py" "$W/ws/_build/default/programs" "$here/lwt" "$W/runs" \
  "$MP" "$top/tools/tests" | tee "$W/check.log"
set -- $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$W/check.log" | tail -n 1)
[ $# -ge 3 ] || set -- 0 passed, 1 failed   # check.py stopped early
echo "$(( $1 + 1 )) passed, $3 failed"
[ "$3" -eq 0 ]

#!/bin/sh
# gen-ocaml-config.sh VERSION PREFIX
#
# Run by the virtual `ocaml` package's build, with the switch's bin directory
# first in PATH. Writes ./ocaml.config, which opam installs as the package's
# configuration: the variables other opam files read as %{ocaml:NAME}%.
# Every value is measured on the compiler the switch actually has (rather than
# assumed from the compiler package's name), so a compiler configured without
# native code or without native dynlink is described truthfully.
set -eu

if [ $# -ne 2 ]; then
  echo "usage: gen-ocaml-config.sh VERSION PREFIX" >&2
  exit 2
fi
want=$1
prefix=$2

ocamlc=$(command -v ocamlc) || {
  echo "gen-ocaml-config.sh: no ocamlc in PATH" >&2
  exit 1
}
have=$(ocamlc -version)
# A variant's version string extends the release's (5.3.0+memprof).
case $have in
  "$want" | "$want"+* | "$want"~*) ;;
  *)
    echo "gen-ocaml-config.sh: ocamlc is version $have, the ocaml package is $want" >&2
    exit 1
    ;;
esac

bool() { if "$@" >/dev/null 2>&1; then echo true; else echo false; fi; }

native=$(bool command -v ocamlopt)
native_tools=$(bool sh -c 'command -v ocamlc.opt && command -v ocamlopt.opt')
# OCaml 5 calls it native_dynlink, OCaml 4 natdynlink_supported; -config-var
# prints nothing for a name the compiler does not know.
native_dynlink=false
if [ "$native" = true ]; then
  dynlink=$(ocamlc -config-var native_dynlink 2>/dev/null || true)
  [ -n "$dynlink" ] ||
    dynlink=$(ocamlc -config-var natdynlink_supported 2>/dev/null || true)
  if [ "$dynlink" = true ]; then native_dynlink=true; fi
fi
stubsdir="$(ocamlc -where)/stublibs"
case $ocamlc in
  "$prefix"/bin/*) preinstalled=false ;;
  *) preinstalled=true ;;
esac

# opam strings: escape backslashes and double quotes.
quote() { printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g')"; }

cat > ocaml.config <<CONFIG
opam-version: "2.0"
variables {
  native: $native
  native-tools: $native_tools
  native-dynlink: $native_dynlink
  stubsdir: $(quote "$stubsdir")
  preinstalled: $preinstalled
  compiler: $(quote "$have")
}
CONFIG

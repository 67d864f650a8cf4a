# debian-mirror.sh: sourced by the scripts that fetch Debian source
# packages with a private apt configuration (build-aux/fetch-ocaml-source.sh,
# opam-switch/prepare-mirror.sh, testsuite/lwt/build-lwt.sh).

# The first Debian archive URI in the system's apt sources (one-line or
# deb822 format), so that no host name is written down here.
system_debian_mirror() {
  {
    cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
      sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\).*/\1/p'
    cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
      sed -n 's/^deb\(-src\)\{0,1\}[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*\).*/\3/p'
  } | grep '/debian/*$' | head -n 1
}

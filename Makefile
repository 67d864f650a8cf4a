# 5.3.0+memprof: build pristine OCaml 5.3.0 + our runtime files and patch
# series, install it, build the ocaml-memprof tools, test and benchmark.
#
# Every step is a stamp under _build/, so a second `make` does no work.
# The assembled tree (_build/stage) is synced into the build tree
# (_build/src) by content: only files whose bytes changed get new
# timestamps, and upstream's own make rebuilds just what depends on them.

-include config.mk
PREFIX ?= $(CURDIR)/_install
OCAML_SOURCE ?= npm
CACHE_DIR ?= $(HOME)/.cache/ocaml-memprof
JOBS ?= 2

B := _build
PRISTINE := $(B)/pristine
STAGE := $(B)/stage
SRC := $(B)/src
DIST := ocaml-5.3.0+memprof

OUR_FILES := $(wildcard runtime/*.c runtime/caml/*.h runtime/patches/* \
  stdlib-patches/* build-aux/assemble.sh)

.PHONY: all compiler tools install demo test test-ours test-upstream \
  test-upstream-traced stress dist bench bench-quick opam-repo opam-test clean distclean

all: compiler tools

config.mk:
	./configure

$(B)/pristine.stamp: build-aux/fetch-ocaml-source.sh build-aux/upstream-digests.sha256 config.mk
	@mkdir -p $(B)
	build-aux/fetch-ocaml-source.sh '$(OCAML_SOURCE)' '$(CACHE_DIR)' $(PRISTINE)
	@touch $@

$(B)/stage.stamp: $(B)/pristine.stamp $(OUR_FILES)
	build-aux/assemble.sh $(PRISTINE) $(CURDIR) $(STAGE)
	@touch $@

# Sync by checksum; the stamp's time moves only when some file changed.
# Upstream's make tracks C dependencies in the runtime (our files and the
# patched upstream ones alike), but not everything else (e.g. a stdlib
# interface seen by the bootstrap compiler, or the domain state layout that
# the native code generator compiles in): when a file outside runtime/ or
# domain_state.tbl changes, the build tree is cleaned.  Nor does it relink
# the native compilers and tools (*.opt) when the runtime library changes:
# they are removed so that they are relinked with it.
$(B)/src.stamp: $(B)/stage.stamp
	@mkdir -p $(SRC)
	@changes=$$(rsync -rlc --itemize-changes $(STAGE)/ $(SRC)/ | sed -n 's/^>f[^ ]* //p'); \
	if [ -n "$$changes" ] || [ ! -f $@ ]; then \
	  echo "$$changes" | sed 's/^/sync: /' | head -n 20; \
	  if [ -f $(SRC)/Makefile.config ] && \
	     { echo "$$changes" | grep -qv -e '^runtime/' -e '^$$' || \
	       echo "$$changes" | grep -q domain_state.tbl; }; then \
	    echo "sync: upstream files changed: cleaning and reconfiguring the build tree"; \
	    $(MAKE) -C $(SRC) clean >/dev/null; $(CONFIGURE_SRC); \
	  elif echo "$$changes" | grep -q '^runtime/'; then \
	    echo "sync: runtime changed: relinking the native tools that embed it"; \
	    find $(SRC) -name '*.opt' -type f -perm -u+x -delete; fi; \
	  touch $@; fi

# Configured once, again when config.mk changes or the sync above cleaned the
# tree: re-running upstream's configure rewrites its outputs and so rebuilds
# the whole tree, which a change to our runtime files does not need.
CONFIGURE_SRC = (cd $(SRC) && ./configure --prefix='$(PREFIX)' --enable-ocamltest -C \
  > ../configure.log 2>&1) || { tail -n 30 $(B)/configure.log; \
  echo "upstream configure failed: see $(B)/configure.log"; exit 1; }
$(SRC)/Makefile.config: config.mk | $(B)/src.stamp
	@$(CONFIGURE_SRC)

$(B)/build.stamp: $(B)/src.stamp $(SRC)/Makefile.config
	$(MAKE) -C $(SRC) -j$(JOBS)
	@touch $@

$(B)/install.stamp: $(B)/build.stamp
	$(MAKE) -C $(SRC) install
	@touch $@

compiler: $(B)/install.stamp
	@$(PREFIX)/bin/ocamlopt -version

tools: $(B)/install.stamp
	$(MAKE) -C tools PREFIX='$(PREFIX)'
	$(MAKE) -C tools install PREFIX='$(PREFIX)'

install: all

# The demo: an unchanged program, traced through OCAMLRUNPARAM only.
demo: all
	@mkdir -p $(B)/demo
	cp testsuite/demo/demo.ml $(B)/demo/
	cd $(B)/demo && $(PREFIX)/bin/ocamlopt -g -o demo demo.ml
	OCAMLRUNPARAM='memprof=$(B)/demo/demo.trace,memprof_rate=1e-4' $(B)/demo/demo
	$(PREFIX)/bin/ocaml-memprof info $(B)/demo/demo.trace
	$(PREFIX)/bin/ocaml-memprof top -n 8 $(B)/demo/demo.trace
	$(PREFIX)/bin/ocaml-memprof leaks --hide '^Stdlib' -n 3 $(B)/demo/demo.trace
	$(PREFIX)/bin/ocamlopt -version

# The distribution tarball: the assembled, patched tree, deterministic.
dist: $(DIST).tar.gz
$(DIST).tar.gz: $(B)/stage.stamp
	tar --sort=name --mtime='2025-01-08 00:00Z' --owner=0 --group=0 --numeric-owner \
	  --transform 's,^\.,$(DIST),' -C $(STAGE) -cf - . | gzip -n9 > $@.tmp
	mv $@.tmp $@
	@sha256sum $@

# ---- Tests ----
# Last line: "N passed, N failed" over all suites.
test: all $(B)/ocamltest.stamp
	@testsuite/run-all.sh '$(PREFIX)' '$(CURDIR)/$(SRC)'

# upstream's test driver, for the upstream runtime tests
$(B)/ocamltest.stamp: $(B)/build.stamp
	$(MAKE) -C $(SRC) -j$(JOBS) ocamltest
	@touch $@

test-ours: all
	@testsuite/run.sh '$(PREFIX)'

# The tracer's concurrency stress tests with many runs (make test runs a
# bounded share): about 10 minutes.
stress: all
	@testsuite/stress.sh '$(PREFIX)'

test-upstream: all $(B)/ocamltest.stamp
	@testsuite/run-upstream.sh '$(CURDIR)/$(SRC)' plain

test-upstream-traced: all $(B)/ocamltest.stamp
	@testsuite/run-upstream.sh '$(CURDIR)/$(SRC)' traced

# Race detection (ThreadSanitizer): the patched tree built with
# --enable-tsan in _build/tsan, the multi-domain tracer programs run traced
# and untraced (testsuite/tsan.sh, suppressions in testsuite/tsan.supp).
# Not part of `make test`: see README.md for its cost.  tsan-vanilla runs
# the same programs, untraced, on pristine 5.3.0 built with TSan.
.PHONY: tsan tsan-vanilla
tsan: $(B)/stage.stamp
	@JOBS=$(JOBS) testsuite/tsan.sh '$(CURDIR)/$(B)/tsan' '$(CURDIR)/$(STAGE)'
tsan-vanilla: $(B)/pristine.stamp
	@JOBS=$(JOBS) testsuite/tsan.sh '$(CURDIR)/$(B)/tsan-vanilla' '$(CURDIR)/$(PRISTINE)' vanilla

# ---- Benchmarks, opam ----
bench: all
	$(MAKE) -C bench PREFIX='$(PREFIX)' PRISTINE='$(CURDIR)/$(PRISTINE)' full

bench-quick: all
	$(MAKE) -C bench PREFIX='$(PREFIX)' PRISTINE='$(CURDIR)/$(PRISTINE)' quick

opam-repo: dist
	sh opam-switch/prepare-mirror.sh $(DIST).tar.gz _opam

opam-test: opam-repo all
	PATH='$(PREFIX)/bin':"$$PATH" sh opam-switch/test-switch.sh _opam

# Maintainers: record the pristine digests of every upstream file the patch
# series touches (what a --with-ocaml-source directory is checked against).
pin-digests: $(B)/pristine.stamp
	cd $(PRISTINE) && cat $(CURDIR)/runtime/patches/*.patch $(CURDIR)/stdlib-patches/*.patch 2>/dev/null | \
	  sed -n 's,^--- a/\([^	 ]*\).*,\1,p' | sort -u | xargs sha256sum > $(CURDIR)/build-aux/upstream-digests.sha256

clean:
	rm -rf $(B) $(DIST).tar.gz
	-$(MAKE) -C tools clean

distclean: clean
	rm -rf _install config.mk

# 5.x+memprof: build pristine OCaml (5.3.0 or 5.4.1, chosen by
# ./configure --ocaml-version) + our runtime files and that version's patch
# series, install it, build the ocaml-memprof tools, test and benchmark.
#
# Every step is a stamp under the version's build directory ($(B): _build
# for 5.3.0, _build-5.4.1 for 5.4.1), so a second `make` does no work and
# both versions' builds coexist.  The assembled tree ($(B)/stage) is synced
# into the build tree ($(B)/src) by content: only files whose bytes changed
# get new timestamps, and upstream's own make rebuilds just what depends on
# them.

-include config.mk
# ./configure's version (CONFIG_VERSION, in config.mk) unless the command
# line says otherwise: `make OCAML_VERSION=5.4.1 test` builds and tests the
# other version with its own defaults (config.mk's --prefix and
# --with-ocaml-source belong to the configured version only).
CONFIG_VERSION ?= 5.3.0
OCAML_VERSION ?= $(CONFIG_VERSION)
ifneq ($(OCAML_VERSION),$(CONFIG_VERSION))
ifeq ($(origin PREFIX),file)
PREFIX := $(if $(filter 5.3.0,$(OCAML_VERSION)),$(CURDIR)/_install,$(CURDIR)/_install-$(OCAML_VERSION))
endif
ifeq ($(origin OCAML_SOURCE),file)
OCAML_SOURCE := fetch
endif
endif
ifeq ($(OCAML_VERSION),5.3.0)
B := _build
PREFIX ?= $(CURDIR)/_install
else
B := _build-$(OCAML_VERSION)
PREFIX ?= $(CURDIR)/_install-$(OCAML_VERSION)
endif
OCAML_SOURCE ?= fetch
CACHE_DIR ?= $(HOME)/.cache/ocaml-memprof
JOBS ?= 2
# The scripts under build-aux/ and testsuite/ read these.
export OCAML_VERSION
export MEMPROF_BUILD_DIR := $(CURDIR)/$(B)

PRISTINE := $(B)/pristine
STAGE := $(B)/stage
SRC := $(B)/src
DIST := ocaml-$(OCAML_VERSION)+memprof
DIGESTS := build-aux/upstream-digests-$(OCAML_VERSION).sha256

OUR_FILES := $(wildcard runtime/*.c runtime/*.sh runtime/caml/*.h \
  runtime/patches/$(OCAML_VERSION)/* stdlib-patches/$(OCAML_VERSION)/* \
  stdlib-patches/*.ml stdlib-patches/*.mli build-aux/assemble.sh)

# What the build of this version was configured with, rewritten only when
# it changes: reconfiguring for the other version leaves this one's build
# up to date.  (A first copy takes config.mk's date, so that a build made
# before this file existed is not redone.)
# Not under make -n or -q, which must change nothing.
CONFIG_VARS := $(B)/config.vars
ifeq (,$(findstring n,$(firstword -$(MAKEFLAGS)))$(findstring q,$(firstword -$(MAKEFLAGS))))
$(shell mkdir -p $(B) && \
  printf 'OCAML_VERSION=%s\nPREFIX=%s\nOCAML_SOURCE=%s\n' '$(OCAML_VERSION)' '$(PREFIX)' \
    '$(patsubst npm,fetch,$(OCAML_SOURCE))' > $(CONFIG_VARS).new && \
  if cmp -s $(CONFIG_VARS).new $(CONFIG_VARS); then rm -f $(CONFIG_VARS).new; \
  elif [ ! -f $(CONFIG_VARS) ] && [ -f $(B)/install.stamp ] && [ -f config.mk ]; then \
    mv $(CONFIG_VARS).new $(CONFIG_VARS) && touch -r config.mk $(CONFIG_VARS); \
  else mv $(CONFIG_VARS).new $(CONFIG_VARS); fi)
endif
$(CONFIG_VARS): ;
.DEFAULT_GOAL := all

.PHONY: all compiler tools install demo test test-versions test-ours test-upstream \
  test-upstream-traced stress dist bench bench-one bench-quick opam-repo opam-test clean distclean

all: compiler tools

config.mk:
	./configure

$(B)/pristine.stamp: build-aux/fetch-ocaml-source.sh $(DIGESTS) $(CONFIG_VARS)
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
# they are removed so that they are relinked with it.  Nor does it track
# the headers of the runtime's assembly: amd64.S expands memprof_trap.h's
# sample-trap entry, so its objects go when that header changes.
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
	    find $(SRC) -name '*.opt' -type f -perm -u+x -delete; \
	    if echo "$$changes" | grep -q '^runtime/caml/memprof_trap.h'; then \
	      rm -f $(SRC)/runtime/amd64*.o; fi; fi; \
	  touch $@; fi

# Configured once, again when this version's configuration (config.vars)
# changes or the sync above cleaned the
# tree: re-running upstream's configure rewrites its outputs and so rebuilds
# the whole tree, which a change to our runtime files does not need.
CONFIGURE_SRC = (cd $(SRC) && ./configure --prefix='$(PREFIX)' --enable-ocamltest -C \
  > ../configure.log 2>&1) || { tail -n 30 $(B)/configure.log; \
  echo "upstream configure failed: see $(B)/configure.log"; exit 1; }
$(SRC)/Makefile.config: $(CONFIG_VARS) | $(B)/src.stamp
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

# Both versions (CI): see build-aux/test-versions.sh.
test-versions:
	@build-aux/test-versions.sh

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
# Both versions, each against its own vanilla release (built once from
# its pristine source into ~/.cache/memprof-bench), then side by side in
# bench/results/results.md.  BENCH_VERSIONS=5.4.1 measures one.
BENCH_VERSIONS ?= 5.3.0 5.4.1
bench:
	@set -e; for v in $(BENCH_VERSIONS); do \
	  $(MAKE) OCAML_VERSION=$$v all; $(MAKE) OCAML_VERSION=$$v bench-one; done
	$(MAKE) -C bench side-by-side VERSIONS='$(BENCH_VERSIONS)'

bench-one: all
	$(MAKE) -C bench PREFIX='$(PREFIX)' PRISTINE='$(CURDIR)/$(PRISTINE)' full

bench-quick: all
	$(MAKE) -C bench PREFIX='$(PREFIX)' PRISTINE='$(CURDIR)/$(PRISTINE)' quick

# One local repository for every version whose `make dist` tarball is here.
opam-repo: dist
	sh opam-switch/prepare-mirror.sh $(sort $(DIST).tar.gz $(wildcard ocaml-*+memprof.tar.gz)) _opam

opam-test: opam-repo all
	PATH='$(PREFIX)/bin':"$$PATH" MEMPROF_EXPECT_VERSION=$(OCAML_VERSION)+memprof \
	  sh opam-switch/test-switch.sh _opam

# Maintainers: record the pristine digests of every upstream file the patch
# series touches (what a --with-ocaml-source directory is checked against).
pin-digests: $(B)/pristine.stamp
	cd $(PRISTINE) && cat $(CURDIR)/runtime/patches/$(OCAML_VERSION)/*.patch $(CURDIR)/stdlib-patches/$(OCAML_VERSION)/*.patch 2>/dev/null | \
	  sed -n 's,^--- a/\([^	 ]*\).*,\1,p' | sort -u | xargs sha256sum > $(CURDIR)/$(DIGESTS) && sha256sum VERSION >> $(CURDIR)/$(DIGESTS)

clean:
	rm -rf $(B) $(DIST).tar.gz
	-$(MAKE) -C tools clean

distclean: clean
	rm -rf $(PREFIX) _opam config.mk

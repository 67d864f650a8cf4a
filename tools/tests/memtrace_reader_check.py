#!/usr/bin/env python3
"""Our CTF exports read by memtrace's own reader (`make -C tools
check-memtrace MEMTRACE_SRC=DIR PREFIX=...`).

memtrace is not in this repository nor in Debian, so the check is opt-in:
MEMTRACE_SRC is the source tree of a memtrace release (0.2.3 is the last one
published; its reader reads CTF versions 1 and 2).  The script compiles that
release's reader modules (src/buf, backtrace_codec, location_codec, trace)
with tests/memtrace_count.ml using PREFIX's ocamlopt, then, for each trace:
exports it with `ocaml-memprof ctf` and checks that memtrace's reader finds
the same number of allocations, promotions, collections and samples as
`ocaml-memprof info` finds in the original, the same samples by source as
our reader finds in the export, and that it parses every backtrace and
location code.

With MEMTRACE_MASTER_SRC, the source tree of memtrace's master branch
(whose reader reads version 3), the same traces are also exported with
`ctf --format-version 3` and master's reader must find the same counts, per
domain too (tests/memtrace_count_v3.ml).

Traces: runtime traces made here with PREFIX (unmarshalled blocks, three
domains, ocamlopt.opt compiling a large generated file, at several rates),
the tools tests' synthetic traces (tests/out/*.mpt, after `make check`), and
the shared memtrace traces when SHARED_DIR has them (re-exported; the v1/v2
ones are also read directly, as a control).  Prints "N passed, N failed".
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import run_tests
from run_tests import check, run

HERE, TOOL, UP = run_tests.HERE, run_tests.TOOL, run_tests.UP
READER_MODULES = ["buf", "backtrace_codec", "location_codec", "trace"]

def build_counter(src, prefix, work, main="memtrace_count"):
    """memtrace's reader modules from [src] (master also has stdlib_shim and
    needs threads) with tests/[main].ml, built in [work]."""
    files = []
    work = os.path.join(work, main)
    os.makedirs(work)
    shim = os.path.join(src, "src", "stdlib_shim.ml")
    for m in (["stdlib_shim"] if os.path.exists(shim) else []) + READER_MODULES:
        for ext in (".mli", ".ml"):
            f = os.path.join(src, "src", m + ext)
            if not os.path.exists(f) and (ext == ".mli" and m == "stdlib_shim"):
                continue
            if not os.path.exists(f):
                sys.exit("memtrace_reader_check: %s: missing (MEMTRACE_SRC must be a memtrace source tree)" % f)
            shutil.copy(f, work)
            files.append(m + ext)
    shutil.copy(os.path.join(HERE, main + ".ml"), work)
    env = dict(os.environ, OCAMLLIB=os.path.join(prefix, "lib", "ocaml"))
    r = run([os.path.join(prefix, "bin", "ocamlopt"), "-w", "-a", "-I", "+unix", "-I", "+threads",
             "unix.cmxa", "threads.cmxa"] + files + [main + ".ml", "-o", main], cwd=work, env=env)
    if r.returncode != 0:
        sys.exit("memtrace_reader_check: building memtrace's reader failed:\n" + r.stderr[-2000:])
    return os.path.join(work, main)


def runtime_traces(prefix, work):
    """Traces of programs run with PREFIX's runtime: (label, path)."""
    env0 = dict(os.environ, OCAMLLIB=os.path.join(prefix, "lib", "ocaml"))
    ocamlopt = os.path.join(prefix, "bin", "ocamlopt")
    out = []
    for prog, arg, rate, libs in (("marshal", "100000", 0.01, []),
                                  ("domains", "300000", 0.01, []),
                                  ("leaky", "200000", 0.001, ["-I", "+unix", "unix.cmxa"])):
        src = os.path.join(HERE, prog + ".ml")
        if not os.path.exists(src):
            continue
        shutil.copy(src, work)
        r = run([ocamlopt, "-g"] + libs + [prog + ".ml", "-o", prog + ".exe"], cwd=work, env=env0)
        if r.returncode != 0:
            check("compile " + prog, False, r.stderr[-300:])
            continue
        trace = os.path.join(work, prog + ".trace")
        env = dict(env0, OCAMLRUNPARAM="memprof=%s,memprof_rate=%g,memprof_seed=5" % (trace, rate))
        r = run([os.path.join(work, prog + ".exe")] + ([arg] if arg else []), cwd=work, env=env)
        if r.returncode == 0 and os.path.exists(trace):
            out.append((prog, trace))
        else:
            check("traced run of " + prog, False, r.stderr[-300:])
    # ocamlopt.opt compiling a large generated file (deep stacks, marshal
    # samples from reading .cmx/.cmi files), at two rates.
    big = os.path.join(work, "big.ml")
    with open(big, "w") as f:
        for i in range(3000):
            f.write("let f%d x = List.map (fun y -> (y + %d, [x; y])) [x; %d; x * 2]\n" % (i, i, i))
            f.write("type t%d = A%d of int * string | B%d of t%d list\n" % (i, i, i, i))
    for rate in ("1e-3", "1e-4"):
        trace = os.path.join(work, "ocamlopt-%s.trace" % rate)
        env = dict(env0, OCAMLRUNPARAM="memprof=%s,memprof_rate=%s,memprof_seed=7" % (trace, rate))
        r = run([ocamlopt + ".opt", "-c", "-g", "big.ml"], cwd=work, env=env)
        if r.returncode == 0 and os.path.exists(trace):
            out.append(("ocamlopt.opt at " + rate, trace))
        else:
            check("traced ocamlopt.opt at " + rate, False, r.stderr[-300:])
    return out


def info(path):
    r = run([TOOL, "info", "--json", path])
    if r.returncode != 0:
        raise RuntimeError("info %s: %s" % (path, r.stderr.strip()))
    return json.loads(r.stdout)


def memtrace(counter, path):
    r = run([counter, path])
    if r.returncode != 0:
        return None, r.stderr.strip()[-300:]
    return json.loads(r.stdout), ""


def compare(counter, label, trace, work):
    export = os.path.join(work, "export-%s.ctf" % "".join(c if c.isalnum() else "_" for c in label))
    r = run([TOOL, "ctf", "-o", export, trace])
    if r.returncode != 0:
        check(label + ": ctf export", False, r.stderr.strip())
        return
    orig, exp = info(trace), info(export)
    m, err = memtrace(counter, export)
    if m is None:
        check(label + ": memtrace's reader reads our export", False, err)
        return
    ev = orig["events"]
    want = (ev.get("alloc", 0), ev.get("promote", 0), ev.get("collect", 0), orig["samples"])
    got = (m["alloc"], m["promote"], m["collect"], m["samples"])
    check("%s: memtrace's reader on our export: alloc/promote/collect/samples %s = ours on the original"
          % (label, got), got == want, "ours %s" % (want,))
    by = exp["samples_by_source"]
    check("%s: samples by source minor/major/external %s equal our reader's on the export"
          % (label, (m["minor"], m["major"], m["external"])),
          (m["minor"], m["major"], m["external"]) == (by["minor"], by["major"], by["external"]),
          json.dumps(by))
    check("%s: every backtrace parsed, %d frames, %d location codes looked up"
          % (label, m["frames"], m["location_codes"]),
          m["location_codes"] == exp["locations"], "ours: %d locations" % exp["locations"])


def compare_v3(counter, label, trace, work):
    """Our version-3 export read by memtrace master's reader: the same
    counts as ours on the original, per domain too."""
    export = os.path.join(work, "export3-%s.ctf" % "".join(c if c.isalnum() else "_" for c in label))
    r = run([TOOL, "ctf", "--format-version", "3", "-o", export, trace])
    if r.returncode != 0:
        check(label + ": ctf --format-version 3", False, r.stderr.strip())
        return
    orig = info(trace)
    m, err = memtrace(counter, export)
    if m is None:
        check(label + ": memtrace master's reader reads our v3 export", False, err)
        return
    ev = orig["events"]
    want = (ev.get("alloc", 0), ev.get("promote", 0), ev.get("collect", 0), orig["samples"],
            sorted([d["domain"], d.get("alloc", 0), d["samples"]] for d in orig["domains"] if d.get("alloc")))
    got = (m["alloc"], m["promote"], m["collect"], m["samples"], m["domains"])
    check("%s: memtrace master's reader on our v3 export: alloc/promote/collect/samples %s and per"
          " domain (domain, allocs, samples) %s = ours on the original" % (label, got[:4], got[4]),
          got == want, "ours %s" % (want,))


def main():
    src = os.environ.get("MEMTRACE_SRC") or (sys.argv[1] if len(sys.argv) > 1 else "")
    master = os.environ.get("MEMTRACE_MASTER_SRC", "")
    prefix = os.environ.get("PREFIX", "")
    if not (src or master) or not prefix:
        sys.exit("usage: MEMTRACE_SRC=DIR [MEMTRACE_MASTER_SRC=DIR] PREFIX=DIR memtrace_reader_check.py "
                 "(DIR: a memtrace release's source tree, and of its master branch for version 3;"
                 " PREFIX: a 5.3.0+memprof install)")
    work = tempfile.mkdtemp(prefix="memtrace-check-")
    traces = runtime_traces(prefix, work)
    traces += [(os.path.basename(p), p) for p in sorted(glob.glob(os.path.join(HERE, "out", "*.mpt")))]
    shared = sorted(glob.glob(os.path.join(UP, "*.ctf"))) if os.path.isdir(UP) else []
    traces += [(os.path.basename(p), p) for p in shared]
    if master:
        counter3 = build_counter(master, prefix, work, "memtrace_count_v3")
        v3 = os.path.join(UP, "memtrace_master_test_ocamlopt.v3.ctf")
        if os.path.exists(v3):
            m, err = memtrace(counter3, v3)
            ev = info(v3)["events"]
            check("control: memtrace master's reader and ours agree on %s" % os.path.basename(v3),
                  m is not None and (m["alloc"], m["promote"], m["collect"])
                  == (ev.get("alloc", 0), ev.get("promote", 0), ev.get("collect", 0)), err)
        for label, trace in traces:
            compare_v3(counter3, label, trace, work)
    if not src:
        shutil.rmtree(work)
        print("%d passed, %d failed" % (run_tests.passed, run_tests.failed))
        sys.exit(1 if run_tests.failed else 0)
    counter = build_counter(src, prefix, work)
    for p in shared:
        if ".v3." not in p:
            m, err = memtrace(counter, p)
            o = info(p)
            ev = o["events"]
            check("control: memtrace's reader and ours agree on %s" % os.path.basename(p),
                  m is not None and (m["alloc"], m["promote"], m["collect"])
                  == (ev.get("alloc", 0), ev.get("promote", 0), ev.get("collect", 0)), err)
    for label, trace in traces:
        compare(counter, label, trace, work)
    shutil.rmtree(work)
    print("%d passed, %d failed" % (run_tests.passed, run_tests.failed))
    sys.exit(1 if run_tests.failed else 0)


if __name__ == "__main__":
    main()

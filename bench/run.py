#!/usr/bin/env python3
"""Benchmark harness of 5.3.0+memprof (issue 6): `make bench` / `make bench-quick`.

Builds every program of bench/programs with two compilers and runs it under
each configuration:

  vanilla          vanilla OCaml 5.3.0, built by this script from the pristine
                   source if not cached (or taken from --vanilla-prefix)
  gcmemprof@R      same vanilla binary, with the Gc.Memprof OCaml tracer of
                   bench/programs/gcmemprof_tracer.ml on at rate R
  memprof-off      5.3.0+memprof, tracing off
  memprof@R        same 5.3.0+memprof binary, traced through OCAMLRUNPARAM at R

and measures: wall-clock medians over interleaved rounds, instruction counts
under valgrind, peak RSS, trace bytes per sample, samples observed against
expected (rate x allocated words) and instructions per sample.  Writes
bench/results/results.json and bench/results/results.md.  See bench/README.md.

Design: one pass per measurement kind over a flat list of (program, config)
"cells"; each run's raw numbers are kept in the JSON so that the markdown is
a pure function of it.  Everything is sequential: the machine has 2 cores
shared by the team, and concurrent runs would measure each other.
"""

import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import zlib

import check_gcmemprof_trace

BENCH_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(BENCH_DIR)
PROG_DIR = os.path.join(BENCH_DIR, "programs")

# deep_list's length: its samples' stacks are about LIST_LEN / 2 deep on
# average (uniform between 0 and LIST_LEN), at most LIST_LEN + 10, below
# the format's 4,096 frames so that its stacks are complete.
LIST_LEN = 4000

# name, source file, extra environment (BENCH_MEMPROF_PARAMS: more
# OCAMLRUNPARAM keys for its traced runs, after --memprof-params), uses several threads/domains,
# valgrind tool for instruction counts.  shallow_rec is deep_rec's binary
# with a 10-frame recursion: the pair gives the per-frame cost.
PROGRAMS = [
    ("short_lived", "short_lived", {}, False),
    ("long_lived", "long_lived", {}, False),
    ("major_alloc", "major_alloc", {}, False),
    ("bigarray_custom", "bigarray_custom", {}, False),
    ("domains4", "domains4", {}, True),
    ("systhreads", "systhreads", {}, True),
    ("leaky_server", "leaky_server", {}, False),
    ("deep_rec", "deep_rec", {"BENCH_DEPTH": "400"}, False),
    ("shallow_rec", "deep_rec", {"BENCH_DEPTH": "10"}, False),
    # Issue 35: recursion whose depth changes by thousands of frames
    # between samples, with complete stacks (memprof_frames above the
    # depth); shallow_list is the same binary 10 frames deep.
    ("deep_list", "deep_list", {"BENCH_LEN": str(LIST_LEN),
                                "BENCH_MEMPROF_PARAMS": "memprof_frames=4096"}, False),
    ("shallow_list", "deep_list", {"BENCH_LEN": "10"}, False),
    # The same stacks cut at the default 1,024 frames: a cut sample must
    # cost no more than a whole one (issue 35).  The same samples as
    # deep_list's: its seed, and a cap said as long (the OCAMLRUNPARAM
    # string is read into the heap, and its length moves every later
    # sample point); with seeds of their own, the two differed by 2.4 %
    # in instructions per sample (9,256 cut against 9,039 whole) where
    # they are equal with the same samples (8,859 both, callgrind).
    ("deep_list_cut", "deep_list", {"BENCH_LEN": str(LIST_LEN),
                                    "BENCH_SEED_AS": "deep_list",
                                    "BENCH_MEMPROF_PARAMS": "memprof_frames=1024"}, False),
    # Lists of 10,000 at the default cap: stacks deeper than the 4,096
    # frames a trace holds, cut at every sample and changing depth by
    # hundreds of frames (the shape issue 35 measured on sandmark's lists).
    ("deep_list_10k", "deep_list", {"BENCH_LEN": "10000"}, False),
]
# Valgrind runs at --instr-scale times these factors: the heavier programs
# are cut so that each valgrind run stays around 300-400 M instructions,
# and those with few samples are run longer, so that a trace's fixed cost
# (about 40-260 k instructions: the header, and the location table, each
# location defined once) weighs little on their instructions per sample at
# 1e-3: each program of the shallow median has at least 5,000 samples
# there, most 10,000 (at 2,500, shallow_rec's figure was 26 instructions
# above its cost per sample).
INSTR_FACTOR = {"short_lived": 0.5, "major_alloc": 0.4, "bigarray_custom": 0.5,
                "systhreads": 0.5, "long_lived": 4.0, "leaky_server": 2.0,
                "deep_rec": 1.6, "shallow_rec": 1.6,
                "deep_list": 0.25, "shallow_list": 1.0, "deep_list_cut": 0.25,
                "deep_list_10k": 0.25}
DEEP_DEPTH, SHALLOW_DEPTH = 400, 10
MULTI = {p[0] for p in PROGRAMS if p[3]}
# The deep-stack programs, left out of the shallow programs' figures.
DEEP = {"deep_rec", "deep_list", "deep_list_cut", "deep_list_10k"}
COMMON_SOURCES = ["gcmemprof_tracer.ml", "bench_common.ml"]


def log(msg):
    print("[bench %s] %s" % (time.strftime("%H:%M:%S"), msg), file=sys.stderr,
          flush=True)


def die(msg):
    print("bench: error: " + msg, file=sys.stderr)
    sys.exit(2)


def compiler_version(prefix):
    exe = os.path.join(prefix, "bin", "ocamlopt")
    if not os.access(exe, os.X_OK):
        return None
    try:
        out = subprocess.run([exe, "-version"], capture_output=True, text=True,
                             timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# ---------------------------------------------------------------- compilers

def ensure_vanilla(args):
    """Return the prefix of a vanilla V (--ocaml-version), building it from
    the pristine source into the cache when none is usable."""
    V = args.ocaml_version
    if args.vanilla_prefix:
        v = compiler_version(args.vanilla_prefix)
        if v != V:
            die("--vanilla-prefix %s: ocamlopt -version says %r, want %s"
                % (args.vanilla_prefix, v, V))
        return args.vanilla_prefix
    prefix = os.path.join(args.cache_dir, "vanilla-" + V)
    # The stamp is written after `make install` succeeded: an interrupted
    # build leaves a prefix that looks usable but is not complete.
    stamp = os.path.join(prefix, ".bench-build-complete")
    if os.path.exists(stamp) and compiler_version(prefix) == V:
        return prefix
    src = args.pristine_src
    try:
        with open(os.path.join(src, "VERSION")) as f:
            ver = f.readline().strip()
    except OSError:
        die("no vanilla compiler cached in %s and no pristine source at %s "
            "(give --vanilla-prefix or --pristine-src)" % (prefix, src))
    if ver != V:
        die("%s/VERSION says %r, want %s" % (src, ver, V))
    build = os.path.join(args.cache_dir, "vanilla-src-" + V)
    logf = os.path.join(args.cache_dir, "vanilla-build-%s.log" % V)
    log("building vanilla %s from %s into %s (log: %s); this takes a while"
        % (V, src, prefix, logf))
    shutil.rmtree(build, ignore_errors=True)
    shutil.rmtree(prefix, ignore_errors=True)
    os.makedirs(args.cache_dir, exist_ok=True)
    # Build in a copy: the pristine tree stays untouched.
    shutil.copytree(src, build, symlinks=True)
    with open(logf, "w") as lf:
        for cmd in (["./configure", "--prefix=" + prefix],
                    ["make", "-j2"], ["make", "install"]):
            lf.write("$ %s\n" % " ".join(cmd))
            lf.flush()
            r = subprocess.run(cmd, cwd=build, stdout=lf, stderr=subprocess.STDOUT)
            if r.returncode != 0:
                die("vanilla build step %r failed, see %s" % (" ".join(cmd), logf))
    if compiler_version(prefix) != V:
        die("vanilla build finished but %s/bin/ocamlopt is not %s" % (prefix, V))
    with open(stamp, "w") as f:
        f.write("built from %s\n" % os.path.abspath(src))
    shutil.rmtree(build, ignore_errors=True)
    return prefix


def find_memprof(args):
    V = args.ocaml_version
    v = compiler_version(args.memprof_prefix)
    if v is not None and v.startswith(V) and "memprof" in v:
        return args.memprof_prefix, v
    if args.allow_missing_memprof:
        log("no %s+memprof compiler at %s (version %r): configurations "
            "2 and 3 skipped" % (V, args.memprof_prefix, v))
        return None, v
    die("no %s+memprof compiler at %s (ocamlopt -version: %r); build it "
        "first or pass --allow-missing-memprof" % (V, args.memprof_prefix, v))


def build_programs(prefix, outdir, sources=None, bytecode=False):
    """Compile every program (or those of [sources]) with the compiler at
    [prefix] into [outdir], native or bytecode; returns {source name:
    executable}."""
    shutil.rmtree(outdir, ignore_errors=True)
    os.makedirs(outdir)
    for f in os.listdir(PROG_DIR):
        if f.endswith(".ml"):
            shutil.copy(os.path.join(PROG_DIR, f), outdir)
    env = dict(os.environ, PATH=os.path.join(prefix, "bin") + ":" + os.environ["PATH"])
    compiler = os.path.join(prefix, "bin", "ocamlc" if bytecode else "ocamlopt")
    lib, obj, ext = (".cma", ".cmo", ".byte") if bytecode else (".cmxa", ".cmx", ".exe")
    flags = ["-g", "-I", "+unix", "-I", "+threads"]

    def run(cmd):
        r = subprocess.run(cmd, cwd=outdir, env=env, capture_output=True, text=True)
        if r.returncode != 0:
            die("build failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))

    run([compiler] + flags + ["-c"] + COMMON_SOURCES)
    exes = {}
    for src in sources or sorted({p[1] for p in PROGRAMS}):
        exe = os.path.join(outdir, src + ext)
        run([compiler] + flags + ["unix" + lib, "threads" + lib, "gcmemprof_tracer" + obj,
                                  "bench_common" + obj, src + ".ml", "-o", exe])
        exes[src] = exe
    return exes


# ------------------------------------------------------------ configurations

# The callback frames' configuration: 16 frames, what docs/ocaml-memprof.md
# recommends for Lwt.
CALLBACK_PARAMS = "memprof_callbacks=16"


def rate_str(r):
    return "%g" % r


def make_configs(args, have_memprof):
    cfgs = [{"name": "vanilla", "compiler": "vanilla", "tracer": None, "rate": None}]
    for r in args.rates:
        cfgs.append({"name": "gcmemprof@" + rate_str(r), "compiler": "vanilla",
                     "tracer": "gcmemprof", "rate": r})
    if have_memprof:
        cfgs.append({"name": "memprof-off", "compiler": "memprof", "tracer": None,
                     "rate": None})
        for r in args.rates:
            cfgs.append({"name": "memprof@" + rate_str(r), "compiler": "memprof",
                         "tracer": "memprof", "rate": r})
        # Callback frames (memprof_callbacks, issue 30): their cost per
        # sample at the highest rate, beside the same rate without them.
        r = max(args.rates)
        cfgs.append({"name": "memprof+callbacks@" + rate_str(r), "compiler": "memprof",
                     "tracer": "memprof", "rate": r, "params": CALLBACK_PARAMS})
    return cfgs


def config_env(args, cfg, trace_path, prog_name, penv=None):
    """Environment of one run: only these variables differ between a traced
    and an untraced run of the same binary.  The native sampler gets a seed
    of its own per (program, rate): reproducible runs, yet independent
    random draws, so that the samples-vs-expected deviations of different
    programs are independent (one seed for all would give every program
    the same sequence of gaps, hence the same relative deviation); a
    program compared with another sample for sample takes that one's
    (BENCH_SEED_AS)."""
    env = {}
    if cfg["tracer"] == "gcmemprof":
        env["BENCH_GCMEMPROF_RATE"] = repr(cfg["rate"])
        env["BENCH_GCMEMPROF_FILE"] = trace_path
        env["BENCH_GCMEMPROF_STATS"] = "1"
    elif cfg["tracer"] == "memprof":
        p = "memprof=%s,memprof_rate=%s" % (trace_path, repr(cfg["rate"]))
        if args.memprof_params:
            p += "," + args.memprof_params
        if penv and penv.get("BENCH_MEMPROF_PARAMS"):
            p += "," + penv["BENCH_MEMPROF_PARAMS"]
        if cfg.get("params"):
            p += "," + cfg["params"]
        if "memprof_seed=" not in p:
            seed_name = (penv or {}).get("BENCH_SEED_AS", prog_name)
            p += ",memprof_seed=%d" % (
                zlib.crc32(("%s@%r" % (seed_name, cfg["rate"])).encode()) + 1)
        env["OCAMLRUNPARAM"] = p
    return env


def base_env():
    env = dict(os.environ)
    for k in ("OCAMLRUNPARAM", "CAMLRUNPARAM", "BENCH_GCMEMPROF_RATE",
              "BENCH_GCMEMPROF_FILE", "BENCH_GCMEMPROF_STATS", "BENCH_STATS",
              "BENCH_SCALE", "BENCH_DEPTH", "BENCH_LEN", "BENCH_MEMPROF_PARAMS"):
        env.pop(k, None)
    return env


# ------------------------------------------------------------------ running

GCMEMPROF_RE = re.compile(r"gcmemprof: samples=(\d+) allocs=(\d+) promotes=(\d+) "
                          r"collects=(\d+) locations=(\d+) bytes=(\d+)")


class Completed:
    """What one run gave: exit status, output, and the child's resource
    usage as wait4() reports it (the numbers /usr/bin/time prints: ru_maxrss
    is its %M, ru_utime + ru_stime its %U + %S), at microsecond resolution
    and without an extra process between the harness and the program."""

    def __init__(self, returncode, stdout, stderr, rusage):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr
        self.rss_kb = rusage.ru_maxrss
        self.cpu_s = rusage.ru_utime + rusage.ru_stime


def run_once(cmd, env, timeout, cwd):
    """Run [cmd] to completion; returns (Completed, wall seconds).  Output
    goes through temporary files so that the harness can wait4() for the
    child itself."""
    out_path = os.path.join(cwd, "run.stdout")
    err_path = os.path.join(cwd, "run.stderr")
    with open(out_path, "w+b") as out, open(err_path, "w+b") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out, stderr=err,
                             stdin=subprocess.DEVNULL)
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        _, status, rusage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        killer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode == -signal.SIGKILL and wall >= timeout:
            die("timeout after %ds: %s" % (timeout, " ".join(cmd)))
        out.seek(0)
        err.seek(0)
        r = Completed(p.returncode, out.read().decode(errors="replace"),
                      err.read().decode(errors="replace"), rusage)
    return r, wall


def checksum_of(stdout):
    lines = [l for l in stdout.splitlines() if l.strip()]
    return lines[-1] if lines else ""


class Runner:
    def __init__(self, args, exes, work):
        self.args, self.exes, self.work = args, exes, work
        self.reference = {}   # program -> checksum line of vanilla

    def trace_path(self, prog, penv, cfg, tag):
        """Where a run writes its trace: named after the program whose
        samples it takes (BENCH_SEED_AS), in a directory of its own, so
        that two programs compared sample for sample have paths of one
        length.  The path is in OCAMLRUNPARAM, which moves every later
        sample point by its length: with deep_list_cut's 4 characters
        more, it cost 9,063 instructions a sample against deep_list's
        9,052, where with paths of one length and the same samples the
        cut run costs 7,616 against 7,620 (callgrind, lists of 4,000)."""
        safe = cfg["name"].replace("@", "_")
        d = os.path.join(self.work, "traces", "%08x" % zlib.crc32(prog.encode()))
        os.makedirs(d, exist_ok=True)
        return os.path.join(d, "%s.%s.%s.trace"
                            % (penv.get("BENCH_SEED_AS", prog), safe, tag))

    def check(self, prog, cfg, r, what):
        if r.returncode != 0:
            die("%s %s (%s) exited %d:\n%s" % (prog, cfg["name"], what, r.returncode,
                                             r.stderr[-2000:]))
        cs = checksum_of(r.stdout)
        ref = self.reference.setdefault((prog, what), cs)
        if cs != ref:
            die("%s %s (%s): result %r differs from %r: tracing changed the "
                "program's behaviour" % (prog, cfg["name"], what, cs, ref))

    def run_prog(self, prog, cfg, scale, tag, wrapper=()):
        """Run one program under one configuration; returns (completed
        process, wall seconds, trace path or None)."""
        name, src, penv, _ = prog
        trace = self.trace_path(name, penv, cfg, tag) if cfg["tracer"] else None
        if trace and os.path.exists(trace):
            os.unlink(trace)
        env = base_env()
        env.update(penv)
        env["BENCH_SCALE"] = repr(scale)
        env.update(config_env(self.args, cfg, trace or "", name, penv))
        exe = self.exes[cfg["compiler"]][src]
        r, wall = run_once(list(wrapper) + [exe], env, self.args.timeout, self.work)
        return r, wall, trace


def memprof_trace_stats(tool, trace):
    """What `ocaml-memprof info --json` says of a 5.3.0+memprof trace: samples,
    events by kind, domains, lost samples, truncation.  Returns a dict with
    "error" when the tool is missing or fails."""
    if not tool:
        return {"error": "no ocaml-memprof tool"}
    if not trace or not os.path.exists(trace):
        return {"error": "no trace file written"}
    r = subprocess.run([tool, "info", "--json", trace], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        return {"error": ((r.stderr or r.stdout).strip().splitlines() or ["?"])[-1]}
    try:
        j = json.loads(r.stdout)
    except ValueError as e:
        return {"error": "info --json output is not JSON: %s" % e}
    events = j.get("events") or {}
    return {"samples": j.get("samples"),
            "events": events,
            "n_events": sum(v for v in events.values() if isinstance(v, int)),
            "domains": len(j.get("domains") or []),
            "lost_samples": j.get("lost_samples"),
            "truncated": j.get("truncated"),
            "samples_by_source": j.get("samples_by_source")}


# ---------------------------------------------------------------- measuring

def measure_alloc_words(runner, scale_of):
    """Allocated words and out-of-heap words, per program, on the untraced
    vanilla binary: what samples are expected from.

    Allocated words (minor + direct major - promoted, headers included, all
    domains) are the program's own count, `bench-stats: heap_words=N` with
    BENCH_STATS=1: each domain adds its Gc.counters at its end
    (bench_common.ml).  The runtime's count at exit (OCAMLRUNPARAM=v=0x400,
    `allocated_words: N`) is only a cross-check: OCaml 5.4.1's misses the
    allocations of domains joined before exit (caml_domain_terminate no
    longer orphans their alloc stats; ocaml/ocaml PR #15092).  For a
    single-domain program the two must agree within 1 %; for the MULTI ones a
    difference is logged and the program's count is used.  Out-of-heap words
    are the bigarray bytes the program attached to custom blocks, in words
    (`custom_words=N`), which both samplers sample too."""
    cfg = {"name": "vanilla", "compiler": "vanilla", "tracer": None, "rate": None}
    out = {}
    for prog in PROGRAMS:
        name, src, penv, _ = prog
        env = base_env()
        env.update(penv)
        env.update({"BENCH_SCALE": repr(scale_of(name)), "BENCH_STATS": "1",
                    "OCAMLRUNPARAM": "v=0x400"})
        r, _ = run_once([runner.exes["vanilla"][src]], env, runner.args.timeout,
                        runner.work)
        if r.returncode != 0:
            die("%s: stats run failed: %s" % (name, r.stderr[-500:]))
        s = re.search(r"bench-stats: heap_words=(\d+) custom_words=(\d+)", r.stderr)
        if not s:
            die("%s: no bench-stats line in %r" % (name, r.stderr[-500:]))
        heap, custom = int(s.group(1)), int(s.group(2))
        m = re.search(r"allocated_words: (\d+)", r.stderr)
        rt = int(m.group(1)) if m else None
        if rt is None:
            log("%s: no allocated_words line from v=0x400, no cross-check" % name)
        else:
            rel = (heap - rt) / rt if rt else float("inf")
            if abs(rel) > 0.01:
                if name not in MULTI:
                    die("%s: the program counted %d allocated words but the "
                        "runtime (v=0x400) %d (%+.2f %%): for a single-domain "
                        "program they must agree, one of the counts is wrong"
                        % (name, heap, rt, 100 * rel))
                log("%s: the program counted %d allocated words over its "
                    "domains, the runtime (v=0x400) %d (%+.1f %%; OCaml 5.4.1 "
                    "loses joined domains' allocations, ocaml/ocaml PR #15092): "
                    "using the program's count" % (name, heap, rt, 100 * rel))
        out[name] = {"heap_words": heap, "custom_words": custom,
                     "runtime_words": rt}
    return out


def trace_record(runner, cfg, r, trace, verify=False):
    """Size and sample count of the trace one run wrote, and what the run
    said on stderr besides the harness's own lines (a runtime complaining
    about its OCAMLRUNPARAM, an I/O error...)."""
    rec = {"bytes": os.path.getsize(trace) if trace and os.path.exists(trace) else 0}
    other = [l for l in r.stderr.splitlines()
             if l.strip() and not l.startswith(("gcmemprof: ", "bench-stats: "))
             and not l.startswith("==")]   # valgrind's own lines
    if other:
        rec["stderr"] = other[:5]
    if cfg["tracer"] == "gcmemprof":
        m = GCMEMPROF_RE.search(r.stderr)
        if m:
            rec.update(samples=int(m.group(1)), allocs=int(m.group(2)),
                       promotes=int(m.group(3)), collects=int(m.group(4)))
        if verify:
            # The baseline must really write what it counts: decode the
            # file and compare with the tracer's own summary.
            try:
                with open(trace, "rb") as f:
                    _, summary = check_gcmemprof_trace.decode(f.read())
            except (OSError, check_gcmemprof_trace.Bad) as e:
                die("%s: Gc.Memprof tracer wrote a bad trace: %s" % (trace, e))
            if not m or summary != m.group(0).split("gcmemprof: ")[-1]:
                die("%s: trace (%s) does not match the tracer's summary (%s)"
                    % (trace, summary, m and m.group(0)))
            rec["verified"] = True
    elif cfg["tracer"] == "memprof":
        info = memprof_trace_stats(runner.args.tool, trace)
        rec["info"] = info
        if info.get("samples") is not None:
            rec["samples"] = info["samples"]
            rec["allocs"] = info["events"].get("alloc")
    return rec


def measure_wall(runner, cfgs, rounds, scale, results):
    """Interleaved rounds: each round runs every (program, config) once, in
    a fresh random order, so that load drift on the shared machine spreads
    over all configurations instead of biasing one."""
    rng = random.Random(20261122)
    cells = [(p, c) for p in PROGRAMS for c in cfgs]
    for rnd in range(rounds):
        rng.shuffle(cells)
        log("wall round %d/%d (%d runs)" % (rnd + 1, rounds, len(cells)))
        for prog, cfg in cells:
            r, wall, trace = runner.run_prog(prog, cfg, scale, "wall")
            runner.check(prog[0], cfg, r, "wall")
            cell = results.setdefault(prog[0], {}).setdefault(cfg["name"], {})
            cell.setdefault("wall_s", []).append(wall)
            cell.setdefault("cpu_s", []).append(r.cpu_s)
            cell.setdefault("rss_kb", []).append(r.rss_kb)
            if cfg["tracer"]:
                # The trace of the first round is analysed; later rounds'
                # sizes are kept to show they do not vary.
                if rnd == 0:
                    cell["trace"] = trace_record(runner, cfg, r, trace)
                cell.setdefault("trace_bytes", []).append(
                    os.path.getsize(trace) if os.path.exists(trace) else 0)
                if os.path.exists(trace) and not runner.args.keep_traces:
                    os.unlink(trace)


IR_RES = [re.compile(r"Collected\s*:\s*([0-9,]+)"),
          re.compile(r"I\s+refs:\s*([0-9,]+)")]


def valgrind_cmd(tool_out, multi):
    cmd = ["valgrind", "--tool=callgrind", "--cache-sim=no",
           "--callgrind-out-file=" + tool_out]
    if multi:
        # Without fair scheduling the thread interleaving, hence the spin
        # and barrier work of the domains, varies by up to 2x between runs.
        cmd.append("--fair-sched=yes")
    return cmd


def measure_instr(runner, cfgs, scale, reps_multi, results):
    """Instruction counts under valgrind at a reduced scale (valgrind runs
    ~40x slower).  Single-threaded programs are deterministic (the sampler's
    generator has a fixed seed), so one run; multi-threaded ones take the
    median of [reps_multi]."""
    out_file = os.path.join(runner.work, "valgrind.out")
    total = len(PROGRAMS) * len(cfgs)
    done = 0
    for prog in PROGRAMS:
        multi = prog[3]
        for cfg in cfgs:
            done += 1
            reps = reps_multi if multi else 1
            irs, recs = [], []
            for _ in range(reps):
                r, wall, trace = runner.run_prog(
                    prog, cfg, scale * INSTR_FACTOR.get(prog[0], 1.0), "instr",
                    wrapper=valgrind_cmd(out_file, multi))
                runner.check(prog[0], cfg, r, "instr")
                ir = None
                for rx in IR_RES:
                    m = rx.search(r.stderr)
                    if m:
                        ir = int(m.group(1).replace(",", ""))
                if ir is None:
                    die("%s %s: no instruction count in valgrind output:\n%s"
                        % (prog[0], cfg["name"], r.stderr[-1500:]))
                irs.append(ir)
                if cfg["tracer"]:
                    recs.append(trace_record(runner, cfg, r, trace, verify=True))
                    if os.path.exists(trace) and not runner.args.keep_traces:
                        os.unlink(trace)
            cell = results.setdefault(prog[0], {}).setdefault(cfg["name"], {})
            cell["instr"] = irs
            if recs:
                # Keep the trace of the run whose count is the median.
                med = sorted(range(len(irs)), key=lambda i: irs[i])[len(irs) // 2]
                cell["instr_trace"] = recs[med]
                cell["instr_median_index"] = med
            log("instr %d/%d %s %s: %s" % (done, total, prog[0], cfg["name"],
                                           ",".join("%.3g" % i for i in irs)))
    if os.path.exists(out_file):
        os.unlink(out_file)


def measure_tool(runner, rate):
    """Throughput of ocaml-memprof on one large trace (short_lived traced by
    5.3.0+memprof at [rate], well above the benchmark rates to get millions
    of events): decode+aggregate (`info`) events per second, and the time of
    every export subcommand it offers among pprof and ctf."""
    tool = runner.args.tool
    prog = [p for p in PROGRAMS if p[0] == "short_lived"]
    if not tool or not prog:
        return None
    cfg = {"name": "memprof@" + rate_str(rate), "compiler": "memprof",
           "tracer": "memprof", "rate": rate}
    r, _, trace = runner.run_prog(prog[0], cfg, runner.args.scale, "tool")
    runner.check("short_lived", cfg, r, "wall")
    res = {"trace": "short_lived traced at %s" % rate_str(rate),
           "trace_bytes": os.path.getsize(trace) if os.path.exists(trace) else 0}
    if not os.path.exists(trace):
        res["error"] = "no trace written"
        return res
    info_times = []
    for _ in range(3):
        t0 = time.perf_counter()
        r = subprocess.run([tool, "info", trace], capture_output=True, text=True)
        info_times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            res["error"] = (r.stderr or r.stdout).strip()[-300:]
            return res
    stats = memprof_trace_stats(tool, trace)
    res["info_s"] = statistics.median(info_times)
    res["events"] = stats.get("n_events")
    if res["events"]:
        res["events_per_s"] = res["events"] / res["info_s"]
    helptext = subprocess.run([tool, "--help"], capture_output=True, text=True)
    helptext = helptext.stdout + helptext.stderr
    for sub in ("pprof", "ctf"):
        if not re.search(r"\b%s\b" % sub, helptext):
            continue
        out = os.path.join(runner.work, "export." + sub)
        t0 = time.perf_counter()
        r = subprocess.run([tool, sub, "-o", out, trace], capture_output=True,
                           text=True)
        dt = time.perf_counter() - t0
        res[sub] = {"seconds": dt, "ok": r.returncode == 0,
                    "bytes": os.path.getsize(out) if os.path.exists(out) else 0}
        if r.returncode != 0:
            res[sub]["error"] = (r.stderr or r.stdout).strip()[-300:]
        if os.path.exists(out):
            os.unlink(out)
    if not runner.args.keep_traces:
        os.unlink(trace)
    return res


CG_LINE = re.compile(r"\s*([\d,]+)\s+\([^)]*\)\s+(\S+)(?:\s+\[(.*)\])?")


def callgrind_functions(path):
    """Exclusive instruction count per function of a callgrind profile,
    keyed "file:function (object)" with directories stripped."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True).stdout
    funcs = {}
    for line in out.splitlines():
        m = CG_LINE.match(line)
        if not m or "PROGRAM TOTALS" in line:
            continue
        name = m.group(2).split("/")[-1]
        if m.group(3) and name.startswith("???"):
            name += " (%s)" % os.path.basename(m.group(3))
        funcs[name] = funcs.get(name, 0) + int(m.group(1).replace(",", ""))
    return funcs


def measure_profile(runner, rate, top=14):
    """Where the native tracer's instructions go: callgrind profiles of the
    same 5.3.0+memprof binary untraced and traced at [rate], for a shallow
    (short_lived) and a deep-stack (deep_rec) program; the per-function
    difference divided by the samples of the traced run."""
    if shutil.which("callgrind_annotate") is None:
        return {"error": "callgrind_annotate not found"}
    res = {}
    for pname, scale in (("short_lived", 0.02), ("deep_rec", 0.01)):
        prog = [p for p in PROGRAMS if p[0] == pname]
        if not prog:
            continue
        profs = {}
        samples = None
        for cfg in ({"name": "memprof-off", "compiler": "memprof", "tracer": None,
                     "rate": None},
                    {"name": "memprof@" + rate_str(rate), "compiler": "memprof",
                     "tracer": "memprof", "rate": rate}):
            out = os.path.join(runner.work, "profile.%s.%s.cg" % (pname, cfg["name"]))
            r, _, trace = runner.run_prog(
                prog[0], cfg, scale, "profile",
                wrapper=["valgrind", "--tool=callgrind", "--cache-sim=no",
                         "--callgrind-out-file=" + out])
            runner.check(pname, cfg, r, "profile")
            profs[cfg["name"]] = callgrind_functions(out)
            os.unlink(out)
            if trace:
                samples = memprof_trace_stats(runner.args.tool, trace).get("samples")
                if os.path.exists(trace) and not runner.args.keep_traces:
                    os.unlink(trace)
        if not samples:
            res[pname] = {"error": "no sample count"}
            continue
        base, traced = profs["memprof-off"], profs["memprof@" + rate_str(rate)]
        delta = {k: traced.get(k, 0) - base.get(k, 0) for k in set(base) | set(traced)}
        rows = sorted(delta.items(), key=lambda kv: -kv[1])
        res[pname] = {"samples": samples, "scale": scale,
                      "total_per_sample": sum(delta.values()) / samples,
                      "top": [(k, v / samples) for k, v in rows[:top]]}
    return res


def measure_bytecode(runner, memprof, rate, scale):
    """Bytecode figures (issue 13): short_lived, and deep_rec at 10 and 400
    frames, compiled with ocamlc -g by VERSION+memprof and run by its
    ocamlrun under callgrind, untraced and traced at [rate] (the same
    bytecode file), at [scale] and 4 x [scale]; marginal instructions per
    sample and per extra frame."""
    outdir = os.path.join(runner.work, "bytecode")
    exes = build_programs(memprof, outdir, ("short_lived", "deep_rec"), bytecode=True)
    ocamlrun = os.path.join(memprof, "bin", "ocamlrun")
    res = {"rate": rate, "scale": scale, "programs": {}}
    out_file = os.path.join(outdir, "valgrind.out")

    def instr(name, src, penv, sc, traced):
        e = base_env()
        e.update(penv)
        e["BENCH_SCALE"] = repr(sc * INSTR_FACTOR.get(name, 1.0))
        trace = os.path.join(outdir, name + ".trace")
        if traced:
            e["OCAMLRUNPARAM"] = ("memprof=%s,memprof_rate=%r,%s,memprof_seed=%d"
                                  % (trace, rate, runner.args.memprof_params,
                                     zlib.crc32(name.encode()) + 1))
        r, _ = run_once(valgrind_cmd(out_file, False)
                        + [ocamlrun, exes[src]],
                        e, runner.args.timeout, outdir)
        if r.returncode != 0:
            raise RuntimeError("%s exited %d" % (name, r.returncode))
        for rx in IR_RES:
            m = rx.search(r.stderr)
            if m:
                n = memprof_trace_stats(runner.args.tool, trace).get("samples") \
                    if traced else None
                return int(m.group(1).replace(",", "")), n
        raise RuntimeError("%s: no instruction count" % name)

    # Two scales: a traced bytecode program first reads its debug
    # information (about 100 M instructions, once), so the per-sample
    # figure is the marginal one, between the two.
    for name, src, penv in (("short_lived", "short_lived", {}),
                            ("shallow_rec", "deep_rec", {"BENCH_DEPTH": str(SHALLOW_DEPTH)}),
                            ("deep_rec", "deep_rec", {"BENCH_DEPTH": str(DEEP_DEPTH)})):
        cell = {}
        try:
            for k, sc in (("small", scale), ("large", 4 * scale)):
                off, _ = instr(name, src, penv, sc, False)
                on, n = instr(name, src, penv, sc, True)
                cell[k] = {"instr_off": off, "instr_on": on, "samples": n}
        except RuntimeError as e:
            return {"error": str(e)}
        sm, lg = cell["small"], cell["large"]
        cell["samples"] = lg["samples"]
        if lg["samples"] and sm["samples"] is not None and lg["samples"] > sm["samples"]:
            cell["instr_per_sample"] = (((lg["instr_on"] - lg["instr_off"])
                                         - (sm["instr_on"] - sm["instr_off"]))
                                        / (lg["samples"] - sm["samples"]))
            cell["fixed"] = ((lg["instr_on"] - lg["instr_off"])
                             - cell["instr_per_sample"] * lg["samples"])
        res["programs"][name] = cell
        log("bytecode %s: %s" % (name, cell))
    p = res["programs"]
    if all(p.get(k, {}).get("instr_per_sample") for k in ("deep_rec", "shallow_rec")):
        res["instr_per_frame"] = ((p["deep_rec"]["instr_per_sample"]
                                   - p["shallow_rec"]["instr_per_sample"])
                                  / (DEEP_DEPTH - SHALLOW_DEPTH))
    shutil.rmtree(outdir, ignore_errors=True)
    return res


# ------------------------------------------------------------------ derive

def geomean(xs):
    xs = [x for x in xs if x is not None and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def untraced_of(cfg):
    return "vanilla" if cfg["compiler"] == "vanilla" else "memprof-off"


def derive(data):
    """Add medians, ratios, per-sample costs and geometric means."""
    cfgs, res, words = data["configs"], data["results"], data["alloc_words"]
    multi = {p["name"] for p in data["programs"] if p["multi"]}
    d = {"wall_median_s": {}, "wall_ratio": {}, "cpu_median_s": {}, "cpu_ratio": {},
         "instr": {}, "instr_ratio": {},
         "rss_kb": {}, "rss_ratio": {}, "tracing": {}, "geomean": {},
         "geomean_st": {}}
    for prog, cells in res.items():
        for cname, cell in cells.items():
            if cell.get("wall_s"):
                d["wall_median_s"].setdefault(prog, {})[cname] = statistics.median(cell["wall_s"])
                d["rss_kb"].setdefault(prog, {})[cname] = statistics.median(cell["rss_kb"])
                d["cpu_median_s"].setdefault(prog, {})[cname] = statistics.median(cell["cpu_s"])
            if cell.get("instr"):
                d["instr"].setdefault(prog, {})[cname] = statistics.median(cell["instr"])
    for key, rkey in (("wall_median_s", "wall_ratio"), ("cpu_median_s", "cpu_ratio"),
                      ("instr", "instr_ratio"),
                      ("rss_kb", "rss_ratio")):
        for prog, row in d[key].items():
            base = row.get("vanilla")
            if base:
                d[rkey][prog] = {c: v / base for c, v in row.items()}
        d["geomean"][rkey] = {
            c["name"]: geomean([d[rkey].get(p, {}).get(c["name"]) for p in d[rkey]])
            for c in cfgs}
        # Multi-threaded programs' counts vary from run to run (spinning at
        # stop-the-world barriers); the single-threaded ones are exact.
        d["geomean_st"][rkey] = {
            c["name"]: geomean([d[rkey].get(p, {}).get(c["name"]) for p in d[rkey]
                                if p not in multi])
            for c in cfgs}
    # Tracing statistics, for the full-scale (wall) and valgrind-scale runs.
    for cfg in cfgs:
        if not cfg["tracer"]:
            continue
        for prog, cells in res.items():
            cell = cells.get(cfg["name"], {})
            t = {}
            for which, rec, wkey in (("wall", cell.get("trace"), "full"),
                                     ("instr", cell.get("instr_trace"), "instr")):
                if not rec:
                    continue
                w = words[wkey][prog]
                exp = cfg["rate"] * (w["heap_words"] + w["custom_words"])
                obs = rec.get("samples")
                e = {"bytes": rec["bytes"], "expected_samples": exp,
                     "observed_samples": obs}
                if obs:
                    e["bytes_per_sample"] = rec["bytes"] / obs
                    e["obs_over_exp"] = obs / exp if exp else None
                    # Poisson band: the count of samples is Poisson(exp).
                    e["z"] = (obs - exp) / math.sqrt(exp) if exp else None
                    if "allocs" in rec:
                        e["allocs"] = rec["allocs"]
                        e["bytes_per_alloc_event"] = rec["bytes"] / rec["allocs"] if rec["allocs"] else None
                info = rec.get("info") or {}
                if info.get("domains") is not None:
                    e["domains"] = info["domains"]
                    e["lost_samples"] = info.get("lost_samples")
                    e["truncated"] = info.get("truncated")
                if info.get("error"):
                    e["error"] = info["error"]
                if which == "instr" and obs:
                    base = d["instr"].get(prog, {}).get(untraced_of(cfg))
                    mine = d["instr"].get(prog, {}).get(cfg["name"])
                    if base and mine:
                        e["instr_per_sample"] = (mine - base) / obs
                t[which] = e
            if t:
                d["tracing"].setdefault(cfg["name"], {})[prog] = t
    # Per-frame cost: deep minus shallow per-sample cost over the depth gap.
    d["per_frame"] = {}
    for cname, progs in d["tracing"].items():
        deep = progs.get("deep_rec", {}).get("instr", {}).get("instr_per_sample")
        shallow = progs.get("shallow_rec", {}).get("instr", {}).get("instr_per_sample")
        if deep is not None and shallow is not None:
            d["per_frame"][cname] = (deep - shallow) / (DEEP_DEPTH - SHALLOW_DEPTH)
    # deep_list's per-frame cost: deep_list minus shallow_list per sample,
    # over the difference of their samples' mean depths (LIST_LEN / 2
    # and 5: uniform over each recursion's depth).
    d["per_frame_list"] = {}
    for cname, progs in d["tracing"].items():
        deep = progs.get("deep_list", {}).get("instr", {}).get("instr_per_sample")
        shallow = progs.get("shallow_list", {}).get("instr", {}).get("instr_per_sample")
        if deep is not None and shallow is not None:
            d["per_frame_list"][cname] = (deep - shallow) / (LIST_LEN / 2 - 5)
    # Aggregates per tracing configuration over programs.
    d["tracing_summary"] = {}
    for cname, progs in d["tracing"].items():
        shallow_progs = [p for p in progs if p not in DEEP and p not in multi]
        ips = [progs[p]["instr"].get("instr_per_sample") for p in shallow_progs
               if "instr" in progs[p]]
        bps = [progs[p]["wall"].get("bytes_per_sample") for p in progs
               if "wall" in progs[p]]
        ips = [x for x in ips if x is not None]
        bps = [x for x in bps if x is not None]
        d["tracing_summary"][cname] = {
            "instr_per_sample_median_shallow": statistics.median(ips) if ips else None,
            "bytes_per_sample_median": statistics.median(bps) if bps else None,
            "bytes_per_sample_max": max(bps) if bps else None,
        }
    # Marginal costs between the two highest rates of each tracer: the
    # extra bytes and instructions per extra sample, free of the fixed costs
    # (file header, location and string tables, start-up) that weigh on
    # the per-sample figures of a single run.
    d["marginal"] = {}
    for tracer in ("gcmemprof", "memprof"):
        tc = sorted((c for c in cfgs if c["tracer"] == tracer and not c.get("params")),
                    key=lambda c: c["rate"])
        if len(tc) < 2:
            continue
        lo, hi = tc[-2]["name"], tc[-1]["name"]
        per = {}
        for prog in res:
            a = d["tracing"].get(lo, {}).get(prog, {})
            b = d["tracing"].get(hi, {}).get(prog, {})
            m = {}
            wa, wb = a.get("wall", {}), b.get("wall", {})
            if wa.get("observed_samples") and wb.get("observed_samples") and \
               wb["observed_samples"] > wa["observed_samples"]:
                m["bytes_per_sample"] = (wb["bytes"] - wa["bytes"]) / (
                    wb["observed_samples"] - wa["observed_samples"])
            ia, ib = a.get("instr", {}), b.get("instr", {})
            Ia = d["instr"].get(prog, {}).get(lo)
            Ib = d["instr"].get(prog, {}).get(hi)
            if ia.get("observed_samples") and ib.get("observed_samples") and Ia and Ib \
               and ib["observed_samples"] > ia["observed_samples"]:
                m["instr_per_sample"] = (Ib - Ia) / (
                    ib["observed_samples"] - ia["observed_samples"])
            per[prog] = m
        ips = [per[p]["instr_per_sample"] for p in per
               if "instr_per_sample" in per[p] and p not in DEEP and p not in multi]
        bps = [per[p]["bytes_per_sample"] for p in per if "bytes_per_sample" in per[p]]
        deep = per.get("deep_rec", {}).get("instr_per_sample")
        shallow = per.get("shallow_rec", {}).get("instr_per_sample")
        d["marginal"][tracer] = {
            "between": [lo, hi], "programs": per,
            "instr_per_sample_median_shallow": statistics.median(ips) if ips else None,
            "bytes_per_sample_median": statistics.median(bps) if bps else None,
            "bytes_per_sample_max": max(bps) if bps else None,
            "instr_per_frame": None if deep is None or shallow is None
            else (deep - shallow) / (DEEP_DEPTH - SHALLOW_DEPTH)}

    # Anything that makes a traced figure suspect, listed in results.md.
    problems = []
    for prog, cells in res.items():
        for cname, cell in cells.items():
            for key in ("trace", "instr_trace"):
                rec = cell.get(key)
                if not rec:
                    continue
                where = "%s %s (%s run)" % (prog, cname, "wall" if key == "trace" else "valgrind")
                info = rec.get("info") or {}
                if info.get("error"):
                    problems.append("%s: %s" % (where, info["error"]))
                if rec.get("samples") is None and not info.get("error"):
                    problems.append("%s: no sample count" % where)
                if info.get("truncated"):
                    problems.append("%s: trace truncated" % where)
                if info.get("lost_samples"):
                    problems.append("%s: %d samples lost" % (where, info["lost_samples"]))
                if rec.get("stderr"):
                    problems.append("%s: stderr: %s" % (where, " / ".join(rec["stderr"])))
    for cname, progs in d["tracing"].items():
        for prog, t in progs.items():
            z = t.get("wall", {}).get("z")
            if z is not None and abs(z) > 4:
                problems.append("%s %s: samples %d vs %.0f expected (z = %+.1f)" % (
                    prog, cname, t["wall"]["observed_samples"],
                    t["wall"]["expected_samples"], z))
        dom = progs.get("domains4", {}).get("wall", {}).get("domains")
        if dom is not None and dom < 4:
            problems.append("domains4 %s: only %d domain(s) in the trace" % (cname, dom))
    d["problems"] = problems
    data["derived"] = d


# ------------------------------------------------------------------ report

def fmt(x, spec):
    return "–" if x is None else format(x, spec)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |",
           "|" + "|".join("---" if i == 0 else "--:" for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def render_md(data):
    d, cfgs, meta = data["derived"], data["configs"], data["meta"]
    names = [c["name"] for c in cfgs]
    progs = [p["name"] for p in data["programs"]]
    multi = sorted(p["name"] for p in data["programs"] if p["multi"])
    L = []
    L.append("# 5.3.0+memprof benchmark results (%s mode)\n" % meta["mode"])
    L.append("Generated by `bench/run.py` on %s. Machine: %d CPUs, load average "
             "%s at start, %s at end. Vanilla: `%s` (%s). 5.3.0+memprof: `%s` (%s). "
             "Full-scale runs: %d interleaved rounds at BENCH_SCALE=%g; instruction "
             "counts: valgrind callgrind at BENCH_SCALE=%g (times a per-program factor, "
             "see results.json). See `bench/README.md` "
             "for how to read these tables.\n" % (
                 meta["date"], meta["cpus"], meta["load_start"], meta["load_end"],
                 meta["vanilla_prefix"], meta["vanilla_version"],
                 meta["memprof_prefix"], meta["memprof_version"], meta["rounds"],
                 meta["scale"], meta["instr_scale"]))
    if not meta["memprof_version"] or "memprof" not in (meta["memprof_version"] or ""):
        L.append("**The 5.3.0+memprof compiler was not available: configurations "
                 "2 and 3 are missing from this run.**\n")

    def ratio_table(title, key, rkey, absfmt, absname, scale=1.0):
        L.append("## %s\n" % title)
        L.append("Ratio vs vanilla (lower is better); last rows: geometric mean over "
                 "all programs, and over the single-threaded ones (all but %s).\n"
                 % ", ".join(multi))
        rows = []
        for p in progs:
            row = d[rkey].get(p, {})
            rows.append([p] + [fmt(row.get(n), ".3f") for n in names])
        gm = d["geomean"][rkey]
        rows.append(["**geomean**"] + ["**%s**" % fmt(gm.get(n), ".3f") for n in names])
        gm = d["geomean_st"][rkey]
        rows.append(["geomean, single-threaded"] + [fmt(gm.get(n), ".3f") for n in names])
        L.append(table(["program"] + names, rows) + "\n")
        L.append("Absolute values (%s):\n" % absname)
        rows = []
        for p in progs:
            row = d[key].get(p, {})
            rows.append([p] + [fmt(None if row.get(n) is None else row[n] * scale, absfmt)
                               for n in names])
        L.append(table(["program"] + names, rows) + "\n")

    ratio_table("Wall-clock time", "wall_median_s", "wall_ratio", ".3f",
                "median seconds")
    ratio_table("CPU time (user + system)", "cpu_median_s", "cpu_ratio", ".3f",
                "median seconds, from the same runs")
    ratio_table("Instructions (valgrind)", "instr", "instr_ratio", ".1f",
                "millions of instructions, median", 1e-6)
    ratio_table("Peak RSS", "rss_kb", "rss_ratio", ".1f", "MiB, median", 1 / 1024)

    L.append("## Samples and trace size\n")
    L.append("Per tracing configuration and program, full-scale run (first round): "
             "samples observed vs expected (rate × allocated words, heap words with "
             "headers plus custom blocks' external words, measured on vanilla); z = "
             "(obs − exp)/√exp, |z| ≤ 3 is inside the Poisson band; trace bytes per "
             "sample (promotions and collections included). Instructions per sample: "
             "(instructions traced − untraced, same binary)/samples, at valgrind "
             "scale.\n")
    rows = []
    for c in cfgs:
        if not c["tracer"]:
            continue
        for p in progs:
            t = d["tracing"].get(c["name"], {}).get(p, {})
            w, i = t.get("wall", {}), t.get("instr", {})
            z = w.get("z")
            rows.append([c["name"], p, fmt(w.get("observed_samples"), "d"),
                         fmt(w.get("expected_samples"), ".0f"),
                         fmt(w.get("obs_over_exp"), ".3f"),
                         fmt(z, "+.1f") + ("" if z is None or abs(z) <= 3 else " ⚠"),
                         fmt(w.get("bytes"), "d"),
                         fmt(w.get("bytes_per_sample"), ".2f"),
                         fmt(i.get("observed_samples"), "d"),
                         fmt(i.get("instr_per_sample"), ".0f"),
                         fmt(w.get("domains"), "d") + (
                             " (lost %s)" % w["lost_samples"] if w.get("lost_samples") else "")
                         + (" truncated" if w.get("truncated") else "")
                         + (" error: %s" % w["error"] if w.get("error") else "")])
    L.append(table(["config", "program", "samples", "expected", "obs/exp", "z",
                    "trace bytes", "bytes/sample", "samples (valgrind)",
                    "instr/sample", "domains in trace"], rows) + "\n")

    L.append("## Per-sample and per-frame cost\n")
    L.append("Median instructions per sample over the single-threaded shallow-stack "
             "programs (all but deep_rec, deep_list, deep_list_cut, deep_list_10k, domains4, systhreads); per captured frame: (instr/sample of deep_rec, %d frames − "
             "shallow_rec, %d frames)/%d.\n" % (DEEP_DEPTH, SHALLOW_DEPTH,
                                                 DEEP_DEPTH - SHALLOW_DEPTH))
    rows = []
    for c in cfgs:
        if not c["tracer"]:
            continue
        s = d["tracing_summary"].get(c["name"], {})
        rows.append([c["name"], fmt(s.get("instr_per_sample_median_shallow"), ".0f"),
                     fmt(d["per_frame"].get(c["name"]), ".1f"),
                     fmt(s.get("bytes_per_sample_median"), ".2f"),
                     fmt(s.get("bytes_per_sample_max"), ".2f")])
    L.append(table(["config", "instr/sample (shallow, median)", "instr/frame",
                    "bytes/sample (median)", "bytes/sample (max)"], rows) + "\n")

    L.append("Marginal cost: between the two highest rates, extra instructions (valgrind "
             "runs) and extra trace bytes (full-scale runs) per extra sample; fixed costs "
             "(header, location tables, start-up) cancel out. Per frame: deep_rec minus "
             "shallow_rec marginal cost over the %d-frame gap.\n" % (DEEP_DEPTH - SHALLOW_DEPTH))
    rows = []
    for tracer, m in d.get("marginal", {}).items():
        rows.append(["%s (%s → %s)" % (tracer, m["between"][0], m["between"][1]),
                     fmt(m["instr_per_sample_median_shallow"], ".0f"),
                     fmt(m["instr_per_frame"], ".1f"),
                     fmt(m["bytes_per_sample_median"], ".2f"),
                     fmt(m["bytes_per_sample_max"], ".2f")])
    L.append(table(["tracer", "instr/sample (shallow, median)", "instr/frame",
                    "bytes/sample (median)", "bytes/sample (max)"], rows) + "\n")
    rows = []
    for tracer, m in d.get("marginal", {}).items():
        for p in progs:
            x = m["programs"].get(p, {})
            rows.append([tracer, p, fmt(x.get("instr_per_sample"), ".0f"),
                         fmt(x.get("bytes_per_sample"), ".2f")])
    L.append("<details><summary>Marginal cost per program</summary>\n")
    L.append(table(["tracer", "program", "instr/sample", "bytes/sample"], rows))
    L.append("\n</details>\n")

    bc = data.get("bytecode")
    if bc:
        L.append("## Bytecode\n")
        if "error" in bc:
            L.append("Not measured: %s\n" % bc["error"])
        else:
            L.append("The same programs compiled with `ocamlc -g` and run by %s+memprof's "
                     "`ocamlrun` under callgrind (BENCH_SCALE=%g and 4 times that, times "
                     "the per-program factor), untraced and traced at %s: instructions "
                     "per sample between the two scales (a traced bytecode program first "
                     "reads its debug information, a fixed cost given apart), and per "
                     "extra frame (deep_rec at %d frames minus at %d, over the "
                     "difference).\n"
                     % (data["meta"].get("ocaml_version", "5.3.0"), bc["scale"],
                        rate_str(bc["rate"]), DEEP_DEPTH, SHALLOW_DEPTH))
            rows = []
            for name in ("short_lived", "shallow_rec", "deep_rec"):
                c = bc["programs"].get(name, {})
                rows.append([name, fmt(c.get("samples"), "d"),
                             fmt(c.get("instr_per_sample"), ".0f"),
                             fmt(None if c.get("fixed") is None else c["fixed"] / 1e6, ".1f")])
            L.append(table(["program", "samples (larger scale)", "instr/sample",
                            "fixed (M instr)"], rows))
            L.append("\nPer extra frame: %s instructions.\n"
                     % fmt(bc.get("instr_per_frame"), ".1f"))
    prof = data.get("profile")
    if prof:
        L.append("## Where the native tracer's time goes\n")
        L.append("Callgrind profiles of the same 5.3.0+memprof binary, untraced and traced "
                 "at the highest rate; per function, the difference in exclusive "
                 "instructions divided by the samples of the traced run (functions of "
                 "the program itself move too: the allocation slow path is taken at "
                 "every sample).\n")
        for pname, pr in sorted(prof.items(), key=lambda kv: kv[0] != "short_lived"):
            if "error" in pr:
                L.append("%s: %s\n" % (pname, pr["error"]))
                continue
            L.append("**%s** (BENCH_SCALE=%g, %d samples): %.0f instructions per sample "
                     "in all.\n" % (pname, pr["scale"], pr["samples"],
                                     pr["total_per_sample"]))
            L.append(table(["function", "instr/sample"],
                           [[k, "%.1f" % v] for k, v in pr["top"]]) + "\n")

    tool = data.get("tool")
    L.append("## Tools\n")
    if tool and "events_per_s" in tool:
        L.append("`ocaml-memprof` on `%s` (%d bytes, %s events): `info` (decode + "
                 "aggregate) %.3f s = **%.1f M events/s**." % (
                     tool["trace"], tool["trace_bytes"], tool["events"],
                     tool["info_s"], tool["events_per_s"] / 1e6))
        for sub in ("pprof", "ctf"):
            if sub in tool:
                L.append(" `%s` export: %.3f s%s." % (
                    sub, tool[sub]["seconds"],
                    "" if tool[sub]["ok"] else " (failed: %s)" % tool[sub].get("error")))
        L.append("\n")
    else:
        L.append("Not measured%s.\n" % (": " + str(tool.get("error")) if tool else
                                         " (no ocaml-memprof or no trace)"))

    L.append("## Problems\n")
    if d["problems"]:
        L.append("\n".join("- " + p for p in d["problems"]) + "\n")
    else:
        L.append("None: every traced run wrote a complete trace, no samples lost, "
                 "sample counts within 4σ of the expectation, nothing on stderr.\n")

    L.append("## Targets (issues 6 and 13)\n")
    L.append(targets_table(data) + "\n")
    return "\n".join(L)


def targets_table(data):
    d, cfgs = data["derived"], data["configs"]
    gw, gi = d["geomean"]["wall_ratio"], d["geomean"]["instr_ratio"]
    rows = []

    def ok(v, limit):
        return "–" if v is None else ("met" if v <= limit else "**missed**")

    v = d["geomean_st"]["instr_ratio"].get("memprof-off")
    if v is not None:
        pct = (v - 1) * 100
        rows.append(["tracing off, instructions vs vanilla (geomean, "
                     "single-threaded programs)", "≤ +0.5 %",
                     "%+.2f %%" % pct, ok(pct, 0.5)])
    v = gi.get("memprof-off")
    if v is not None:
        pct = (v - 1) * 100
        rows.append(["tracing off, instructions vs vanilla (geomean, all)",
                     "≤ +0.5 %", "%+.2f %%" % pct, ok(pct, 0.5)])
    for c in cfgs:
        if c["tracer"] != "memprof":
            continue
        s = d["tracing_summary"].get(c["name"], {})
        x = s.get("instr_per_sample_median_shallow")
        if c["rate"] >= 1e-4:
            rows.append(["%s: instr per sample, shallow" % c["name"], "≤ 600",
                         fmt(x, ".0f"), ok(x, 600)])
        pf = d["per_frame"].get(c["name"])
        if c["rate"] >= 1e-4:
            rows.append(["%s: instr per captured frame" % c["name"], "≤ 15",
                         fmt(pf, ".1f"), ok(pf, 15)])
        if c["rate"] in (1e-4, 1e-3):
            lim = 1.0 if c["rate"] == 1e-4 else 8.0
            v = gi.get(c["name"])
            pct = None if v is None else (v - 1) * 100
            rows.append(["%s: instruction overhead vs vanilla (geomean, deep-stack "
                         "program included; issue 13)" % c["name"],
                         "≤ +%g %%" % lim, fmt(pct, "+.2f") + (" %" if pct is not None else ""),
                         ok(pct, lim)])
            if c["rate"] == 1e-3:
                v = d["instr_ratio"].get("deep_rec", {}).get(c["name"])
                pct = None if v is None else (v - 1) * 100
                rows.append(["%s: deep_rec (400 frames, complete stacks), instruction "
                             "overhead (issue 13: a deep-stack program)" % c["name"],
                             "≤ +30 %", fmt(pct, "+.1f") + (" %" if pct is not None else ""),
                             ok(pct, 30)])
            if c["rate"] == 1e-3:
                pf = d.get("per_frame_list", {}).get(c["name"])
                rows.append(["%s: deep_list (recursions %d frames deep, complete "
                             "stacks), instr per frame (issue 35)" % (c["name"], LIST_LEN),
                             "≤ 15", fmt(pf, ".1f"), ok(pf, 15)])
                v = d["instr_ratio"].get("deep_list", {}).get(c["name"])
                pct = None if v is None else (v - 1) * 100
                g = d["instr_ratio"].get("deep_list", {}).get(c["name"].replace(
                    "memprof@", "gcmemprof@"))
                rows.append(["%s: deep_list instruction overhead (issue 35; the "
                             "Gc.Memprof tracer: %s)" % (c["name"], "–" if g is None
                                                         else "%+.0f %%" % ((g - 1) * 100)),
                             "≤ +30 %", fmt(pct, "+.1f") + (" %" if pct is not None else ""),
                             ok(pct, 30)])
                t = d["tracing"].get(c["name"], {})
                cut = t.get("deep_list_cut", {}).get("instr", {}).get("instr_per_sample")
                whole = t.get("deep_list", {}).get("instr", {}).get("instr_per_sample")
                rows.append(["%s: deep_list cut at 1,024 frames vs whole, instr per "
                             "sample (issue 35: a cut stack costs no more)" % c["name"],
                             "cut ≤ whole", "%s vs %s" % (fmt(cut, ".0f"), fmt(whole, ".0f")),
                             "–" if cut is None or whole is None
                             else ("met" if cut <= whole else "**missed**")])
                v = d["instr_ratio"].get("deep_list_10k", {}).get(c["name"])
                pct = None if v is None else (v - 1) * 100
                rows.append(["%s: deep_list_10k (10,000 frames deep, cut at every "
                             "sample), instruction overhead (issue 35, for "
                             "reference)" % c["name"], "–",
                             fmt(pct, "+.1f") + (" %" if pct is not None else ""), "–"])
            w = gw.get(c["name"])
            pct = None if w is None else (w - 1) * 100
            rows.append(["%s: wall overhead vs vanilla (geomean)" % c["name"],
                         "≤ +%g %%" % lim, fmt(pct, "+.1f") + (" %" if pct is not None else ""),
                         ok(pct, lim)])
            cpu = d["geomean"]["cpu_ratio"].get(c["name"])
            pct = None if cpu is None else (cpu - 1) * 100
            rows.append(["%s: CPU-time overhead vs vanilla (geomean; for reference, "
                         "less sensitive to the machine's load)" % c["name"],
                         "≤ +%g %%" % lim, fmt(pct, "+.1f") + (" %" if pct is not None else ""),
                         ok(pct, lim)])
        b = s.get("bytes_per_sample_max")
        rows.append(["%s: trace bytes per sample (max over programs)" % c["name"],
                     "≤ 10", fmt(b, ".2f"), ok(b, 10)])
    m = d.get("marginal", {}).get("memprof")
    if m:
        between = "%s → %s" % tuple(m["between"])
        x = m["instr_per_sample_median_shallow"]
        rows.append(["memprof marginal instr per sample, shallow (%s)" % between,
                     "≤ 600", fmt(x, ".0f"), ok(x, 600)])
        x = m["instr_per_frame"]
        rows.append(["memprof marginal instr per captured frame (%s)" % between,
                     "≤ 15", fmt(x, ".1f"), ok(x, 15)])
        x = m["bytes_per_sample_max"]
        rows.append(["memprof marginal trace bytes per sample, max (%s)" % between,
                     "≤ 10", fmt(x, ".2f"), ok(x, 10)])
    bc = data.get("bytecode") or {}
    if bc.get("programs"):
        sl = bc["programs"].get("short_lived", {}).get("instr_per_sample")
        rows.append(["bytecode (issue 13: reported): instr per sample (short_lived, "
                     "marginal), per captured frame", "–", "%s, %s" % (
                         fmt(sl, ".0f"), fmt(bc.get("instr_per_frame"), ".1f")), "–"])
    tool = data.get("tool") or {}
    eps = tool.get("events_per_s")
    rows.append(["ocaml-memprof decode+aggregate", "≥ 20 M events/s",
                 fmt(None if eps is None else eps / 1e6, ".1f"),
                 "–" if eps is None else ("met" if eps >= 20e6 else "**missed**")])
    # The baseline, for comparison with the reference figures of the issue.
    for c in cfgs:
        if c["tracer"] != "gcmemprof":
            continue
        s = d["tracing_summary"].get(c["name"], {})
        w = gw.get(c["name"])
        rows.append(["baseline %s (reference: memtrace ~3,200 instr/sample, ~110/frame, "
                     "+6 %% wall at 1e-4, +35 %% at 1e-3, 12–24 B/sample)" % c["name"],
                     "–", "%s instr/sample, %s instr/frame, %s wall, %s B/sample" % (
                         fmt(s.get("instr_per_sample_median_shallow"), ".0f"),
                         fmt(d["per_frame"].get(c["name"]), ".1f"),
                         "–" if w is None else "%+.1f %%" % ((w - 1) * 100),
                         fmt(s.get("bytes_per_sample_median"), ".1f")), "–"])
    return table(["target", "goal", "measured", "status"], rows)


# -------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ocaml-version", default=os.environ.get("OCAML_VERSION", "5.3.0"),
                    choices=["5.3.0", "5.4.1"],
                    help="the release measured: vanilla V against V+memprof "
                         "(results in bench/results/V/)")
    ap.add_argument("--side-by-side", nargs="+", metavar="RESULTS.json",
                    help="measure nothing: write bench/results/results.md, the "
                         "targets of each run's JSON (one per version) side by side")
    ap.add_argument("--quick", action="store_true",
                    help="smoke run: small scale, 2 rates, 3 rounds (a few minutes)")
    ap.add_argument("--vanilla-prefix", default=os.environ.get("VANILLA_PREFIX"),
                    help="installed vanilla 5.3.0 to use instead of building one")
    ap.add_argument("--pristine-src", default=os.environ.get("PRISTINE_SRC", "/tmp/up/package"),
                    help="pristine OCaml 5.3.0 source tree to build vanilla from")
    ap.add_argument("--cache-dir", default=os.environ.get(
        "BENCH_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "memprof-bench")),
        help="where the vanilla compiler is built and cached")
    ap.add_argument("--memprof-prefix", default=os.environ.get(
        "MEMPROF_PREFIX", os.path.join(REPO_DIR, "_install")))
    ap.add_argument("--allow-missing-memprof", action="store_true",
                    help="run configurations 1 and 4 only if 5.3.0+memprof is absent")
    ap.add_argument("--tool", default=os.environ.get(
        "MEMPROF_TOOL", os.path.join(REPO_DIR, "tools", "ocaml-memprof")))
    ap.add_argument("--rates", type=float, nargs="+")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--scale", type=float)
    ap.add_argument("--instr-scale", type=float)
    ap.add_argument("--instr-reps-multi", type=int)
    ap.add_argument("--no-instr", action="store_true", help="skip valgrind")
    ap.add_argument("--memprof-params", default="memprof_frames=1024",
                    help="extra OCAMLRUNPARAM keys for traced runs (deep_rec needs "
                         "more than 400 frames); unless it sets memprof_seed, each "
                         "(program, rate) gets a fixed seed of its own")
    ap.add_argument("--tool-rate", type=float,
                    help="sampling rate of the trace the tool is timed on")
    ap.add_argument("--only", help="comma-separated subset of programs")
    ap.add_argument("--out", help="output directory (default: bench/results, "
                    "quick mode: bench/results/quick, which git ignores)")
    ap.add_argument("--work", default=os.path.join(BENCH_DIR, "_build"))
    ap.add_argument("--keep-traces", action="store_true")
    ap.add_argument("--timeout", type=int, default=900)
    ap.add_argument("--render", metavar="RESULTS.json",
                    help="measure nothing: recompute the derived figures of an "
                         "earlier run's JSON and write results.md/json to --out")
    args = ap.parse_args()

    if args.side_by_side:
        write_side_by_side(args.side_by_side,
                           args.out or os.path.join(BENCH_DIR, "results"))
        return
    if args.render:
        with open(args.render) as f:
            data = json.load(f)
        derive(data)
        write_results(data, args.out or os.path.join(
            BENCH_DIR, "results", data["meta"].get("ocaml_version", "5.3.0")))
        return

    q = args.quick
    args.rates = args.rates or ([1e-4, 1e-3] if q else [1e-6, 1e-5, 1e-4, 1e-3])
    args.rounds = args.rounds or (3 if q else 5)
    args.scale = args.scale or (0.2 if q else 1.0)
    args.instr_scale = args.instr_scale or (0.01 if q else 0.05)
    args.instr_reps_multi = args.instr_reps_multi or (1 if q else 3)
    args.tool_rate = args.tool_rate or (1e-2 if q else 3e-2)
    args.out = args.out or os.path.join(BENCH_DIR, "results", "quick" if q else "",
                                        args.ocaml_version)
    if not (os.path.isfile(args.tool) and os.access(args.tool, os.X_OK)):
        args.tool = None
    global PROGRAMS
    if args.only:
        keep = args.only.split(",")
        unknown = set(keep) - {p[0] for p in PROGRAMS}
        if unknown:
            die("unknown program(s): " + ", ".join(sorted(unknown)))
        PROGRAMS = [p for p in PROGRAMS if p[0] in keep]
    if shutil.which("valgrind") is None and not args.no_instr:
        die("valgrind not found (apt-get install valgrind, or --no-instr)")

    t_start = time.time()
    load_start = "%.2f" % os.getloadavg()[0]
    vanilla = ensure_vanilla(args)
    memprof, memprof_version = find_memprof(args)
    args.work = os.path.join(args.work, args.ocaml_version)
    os.makedirs(os.path.join(args.work, "traces"), exist_ok=True)
    exes = {"vanilla": build_programs(vanilla, os.path.join(args.work, "vanilla"))}
    if memprof:
        exes["memprof"] = build_programs(memprof, os.path.join(args.work, "memprof"))
    log("built %d programs with %d compiler(s)" % (len(exes["vanilla"]), len(exes)))
    cfgs = make_configs(args, memprof is not None)
    runner = Runner(args, exes, args.work)

    data = {"meta": {
        "mode": "quick" if q else "full",
        "ocaml_version": args.ocaml_version,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "cpus": os.cpu_count(), "load_start": load_start,
        "vanilla_prefix": vanilla, "vanilla_version": compiler_version(vanilla),
        "memprof_prefix": args.memprof_prefix, "memprof_version": memprof_version,
        "rounds": args.rounds, "scale": args.scale, "instr_scale": args.instr_scale,
        "rates": args.rates, "memprof_params": args.memprof_params,
        "instr_factor": INSTR_FACTOR,
        "tool": args.tool,
        "git": subprocess.run(["git", "-C", REPO_DIR, "rev-parse", "HEAD"],
                              capture_output=True, text=True).stdout.strip()},
        "programs": [{"name": p[0], "source": p[1], "env": p[2], "multi": p[3]}
                     for p in PROGRAMS],
        "configs": cfgs, "results": {}}
    log("allocation volumes (vanilla, counted by the programs; v=0x400 cross-check)")
    data["alloc_words"] = {
        "full": measure_alloc_words(runner, lambda name: args.scale),
        "instr": measure_alloc_words(
            runner, lambda name: args.instr_scale * INSTR_FACTOR.get(name, 1.0))}
    measure_wall(runner, cfgs, args.rounds, args.scale, data["results"])
    if not args.no_instr:
        measure_instr(runner, cfgs, args.instr_scale, args.instr_reps_multi,
                      data["results"])
    if memprof and args.tool and not args.no_instr:
        log("profile of the native tracer")
        data["profile"] = measure_profile(runner, max(args.rates))
    if memprof and args.tool and not args.no_instr:
        log("bytecode")
        data["bytecode"] = measure_bytecode(runner, memprof, max(args.rates),
                                            args.instr_scale * 0.1)
    if memprof and args.tool:
        log("tool throughput")
        data["tool"] = measure_tool(runner, args.tool_rate)
    data["meta"]["load_end"] = "%.2f" % os.getloadavg()[0]
    data["meta"]["elapsed_s"] = time.time() - t_start
    derive(data)
    write_results(data, args.out)
    log("done in %.0f s: %s/results.md" % (data["meta"]["elapsed_s"], args.out))


def write_results(data, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    md = render_md(data)
    # The tables name the release measured; render_md's text says 5.3.0.
    V = data["meta"].get("ocaml_version", "5.3.0")
    if V != "5.3.0":
        md = md.replace("5.3.0", V)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write(md)


def write_side_by_side(files, out):
    """bench/results/results.md: each version's targets table (vanilla V vs
    V+memprof, measured by the same harness) in one table, a column per
    version, from the runs' results.json."""
    runs = []
    for fn in files:
        with open(fn) as f:
            data = json.load(f)
        derive(data)
        runs.append((data["meta"].get("ocaml_version", "5.3.0"), data, fn))
    tables = []
    for V, data, fn in runs:
        rows = {}
        for line in targets_table(data).splitlines()[2:]:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 4:
                rows[cells[0]] = (cells[1], cells[2], cells[3])
        tables.append(rows)
    order = []
    for rows in tables:
        for k in rows:
            if k not in order:
                order.append(k)
    head = ["target", "goal"]
    for V, data, fn in runs:
        head += ["%s+memprof vs vanilla %s" % (V, V), "status"]
    body = []
    for k in order:
        goal = next((t[k][0] for t in tables if k in t), "–")
        row = [k, goal]
        for t in tables:
            row += list(t[k][1:]) if k in t else ["–", "–"]
        body.append(row)
    L = ["# 5.x+memprof benchmark results, side by side\n",
         "Each version against its own vanilla release, same programs, same harness "
         "(`make bench`). Full tables: " + ", ".join(
             "[%s](%s/results.md) (%s mode, %s, %.0f s, load %s→%s)" % (
                 V, V, d["meta"]["mode"], d["meta"]["date"],
                 d["meta"].get("elapsed_s", 0), d["meta"].get("load_start"),
                 d["meta"].get("load_end")) for V, d, fn in runs) + ".\n",
         table(head, body) + "\n"]
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(L))
    log("wrote %s/results.md" % out)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""ocaml-memprof test suite (`make -C tools check`).

Checks numbers, not just exit codes:
- the shared upstream memtrace traces: event counts against the table in
  shared/testdata/memtrace-upstream/README.md and against mtctf_check.py;
  ctf export re-encodes v2 files byte for byte and the v3 sample into the
  v2 sample; exports pass mtctf_check (reader checks and viewer rules);
- synthetic traces from tests/gen_trace (5.3.0+memprof format through the
  shared codec, raw and LZ4; memtrace CTF): top's estimates against the true
  volumes within 4.5 standard deviations of the binomial sampling, leaks
  ranks the leaking site first, filters select exactly what they should,
  timeline shows the GC heap and the compaction, folded/pprof totals equal
  top's, diff finds the leak;
- the HTML flame graph rendered in headless Chromium shows the frames;
- the HTML report (report_tests.py): figures equal top's for three filter
  settings, views not blank, no console error, timings recorded;
- Lwt threads (lwt_tests.py): `lwt` and the report's Lwt view against the
  true pending promises of tests/lwt_like/pending.ml, and against each other;
- robustness: truncated and corrupted files give exit status 0 (with a
  truncation warning) or 1 with a one-line error, never a crash.
Prints "N passed, N failed" last; exits non-zero on any failure.
"""
import difflib
import gzip
import json
import math
import os
import random
import re
import resource
import shutil
import struct
import subprocess
import sys
import time

import cdp
import lwt_tests
import report_tests
import snaptypes_tests
import types_tests

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
# The binaries under test: the normal build, or another one (check-asan).
TOOL = os.path.join(TOOLS, os.environ.get("OCAML_MEMPROF", "ocaml-memprof"))
BUILD = os.path.join(TOOLS, os.environ.get("TOOLS_BUILD", "build"))
GEN = os.path.join(BUILD, "gen_trace")
SHARED = os.environ.get("SHARED_DIR", os.path.join(TOOLS, "..", "..", "shared"))
UP = os.path.join(SHARED, "testdata", "memtrace-upstream")
CHECKER = os.path.join(SHARED, "spec", "tools", "mtctf_check.py")
OUT = os.path.join(HERE, "out")

passed = failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def tool(*args):
    return run([TOOL] + list(args))


def tool_json(*args):
    r = tool(*args)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (args, r.stderr.strip()))
    return json.loads(r.stdout)


# README table: version, packets, loc pkts, allocs, promotions, collections,
# location events, max bt, largest packet; then codes and span (s).
UPSTREAM = {
    "memtrace_master_test_ocamlopt.v3.ctf": (3, 31, 15, 1676, 257, 1566, 1950, 547, 11984, 1949, 0.852),
    "memtrace_v0.2.3_test_ocamlopt.v2.ctf": (2, 31, 15, 1676, 257, 1566, 1950, 547, 11982, 1949, 0.852),
    "memtrace_v0.2.3_examples_ocamlopt.v1.ctf": (1, 193, 106, 84270, 12007, 78758, 6356, 639, 28707, 6336, 0.935),
    "memtrace_v0.2.3_examples_lists_and_sets.v1.ctf": (1, 3, 1, 756, 216, 755, 22, 9982, 16729, 22, 0.013),
    "memtrace_maketrace_examples_ocamlopt-1e4.v2.ctf": (2, 55, 27, 8217, 1160, 7692, 3480, 622, 28573, 3478, 0.669),
    "memtrace_maketrace_examples_ocamlopt-1e5.v2.ctf": (2, 25, 12, 827, 103, 772, 1493, 481, 7549, 1492, 0.651),
    "memtrace_viewer_master_test_server_test_trace.v2.ctf": (2, 3, 1, 54, 28, 26, 19, 46, 1226, 19, 0.002),
}


def checker_counts(path):
    r = run([sys.executable, CHECKER, "check", path])
    m = dict(re.findall(r"(\w+)=(\d+)", r.stdout))
    return r.returncode, {k: int(v) for k, v in m.items()}, r.stdout


def test_upstream():
    if not os.path.isdir(UP):
        check("upstream traces present at " + UP, False)
        return
    for name, (ver, pk, lpk, al, pr, co, le, mbt, lp, codes, span) in sorted(UPSTREAM.items()):
        path = os.path.join(UP, name)
        j = tool_json("info", "--json", path)
        ev, c = j["events"], j["ctf"]
        got = (j["version"], c["packets"], c["location_packets"], ev["alloc"], ev["promote"],
               ev["collect"], c["location_events"], c["max_backtrace"], c["largest_packet"])
        check("info counts = README: " + name, got == (ver, pk, lpk, al, pr, co, le, mbt, lp),
              "%s != %s" % (got, (ver, pk, lpk, al, pr, co, le, mbt, lp)))
        check("info distinct codes and span = README: " + name,
              j["locations"] == codes and round(j["duration_s"], 3) == span,
              "%s %s" % (j["locations"], j["duration_s"]))
        rc, cc, _ = checker_counts(path)
        check("info counts = mtctf_check: " + name,
              rc == 0 and (cc["allocs"], cc["promotions"], cc["collections"], cc["verified"])
              == (ev["alloc"], ev["promote"], ev["collect"], c["verified_packets"]))
        # Estimated bytes: samples / rate * 8.
        check("info estimate = samples/rate*8: " + name,
              abs(j["estimated_allocated_bytes"] - j["samples"] / j["sampling_rate"] * 8) < 1)
        out = os.path.join(OUT, "export-" + name)
        r = tool("ctf", "-o", out, path)
        rc, cc2, text = checker_counts(out)
        check("ctf export passes mtctf_check: " + name,
              r.returncode == 0 and rc == 0 and "viewer rules: ok" in text
              and cc2["allocs"] == al and cc2["promotions"] == pr and cc2["collections"] == co,
              r.stderr + text[-300:])
        if ver == 2:
            check("ctf export byte-identical: " + name,
                  open(out, "rb").read() == open(path, "rb").read())
        # top totals agree with info and with the pprof export.
        t = tool_json("top", "--json", "-n", "0", path)
        check("top total = info estimate: " + name,
              abs(t["total"]["alloc_bytes"] - j["estimated_allocated_bytes"]) < 1)
    src3 = os.path.join(UP, "memtrace_master_test_ocamlopt.v3.ctf")
    out3 = os.path.join(OUT, "export3-memtrace_master_test_ocamlopt.v3.ctf")
    r = tool("ctf", "--format-version", "3", "-o", out3, src3)
    check("v3 sample exported as v3 reproduces it byte for byte",
          r.returncode == 0 and open(out3, "rb").read() == open(src3, "rb").read(), r.stderr)
    v3 = os.path.join(OUT, "export-memtrace_master_test_ocamlopt.v3.ctf")
    v2 = os.path.join(UP, "memtrace_v0.2.3_test_ocamlopt.v2.ctf")
    check("v3 sample exported as v2 equals the v2 sample",
          os.path.exists(v3) and open(v3, "rb").read() == open(v2, "rb").read())


def go_top(pb, index):
    """go tool pprof -top in bytes: (total, [names]) or an error string."""
    if not shutil.which("go"):
        return None
    r = run(["go", "tool", "pprof", "-top", "-nodecount=100000", "-unit=B", "-sample_index=" + index, pb],
            cwd=OUT, env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    m = re.search(r"Total samples = (\d+)B", r.stdout)
    if not m:
        return "error: " + r.stderr[-300:] + r.stdout[-300:]
    names = []
    for line in r.stdout.splitlines():
        f = re.match(r"\s*\S+\s+\S+%\s+\S+%\s+\S+\s+\S+%\s?(.*)$", line)
        if f and "flat%" not in line:
            names.append(f.group(1).strip())
    return int(m.group(1)), names


def go_total(pb, index):
    t = go_top(pb, index)
    if isinstance(t, str) and "Total samples = 0 " in t:
        return 0                 # printed without a unit
    m = isinstance(t, str) and re.search(r"of (\d+)B total", t)
    if m:                        # no "Total samples" line when no node is dropped
        return int(m.group(1))
    return t[0] if isinstance(t, tuple) else t


def test_pprof(path, label):
    pb = os.path.join(OUT, label + ".pb.gz")
    r = tool("pprof", "-o", pb, path)
    check("pprof writes gzip: " + label, r.returncode == 0 and gzip.open(pb).read(2) != b"")
    t = tool_json("top", "--json", "-n", "0", path)
    if not shutil.which("go"):
        check("go tool pprof available", False)
        return
    a = go_total(pb, "alloc_space")
    i = go_total(pb, "inuse_space")
    # Rates of the form 10^-k make a sample an integral number of bytes:
    # the totals then agree to the byte.
    check("go tool pprof alloc_space total = top, to the byte: " + label,
          a == t["total"]["alloc_bytes"], "%s vs %s" % (a, t["total"]["alloc_bytes"]))
    check("go tool pprof inuse_space total = top live, to the byte: " + label,
          i == t["total"]["live_bytes"], "%s vs %s" % (i, t["total"]["live_bytes"]))
    top = go_top(pb, "alloc_space")
    names = top[1] if isinstance(top, tuple) else []
    check("go tool pprof -top: no blank function name, (fun) and <unknown> kept: " + label,
          names and all(names) and all(not n.endswith(".") for n in names), str(names[:20]))


TRUE_WORDS = {}


def gen(fmt, out, *extra):
    r = run([GEN, "--format", fmt, "-o", out] + list(extra))
    if r.returncode != 0:
        raise RuntimeError("gen_trace failed: " + r.stderr)
    truth = {}
    for line in r.stdout.split("\n"):
        if line.strip():
            k, v = line.split()
            truth[k] = int(v)
    return truth


def within(est_bytes, true_words, rate, sigmas=4.5):
    """Samples ~ Binomial(words, rate); estimate = samples/rate*8."""
    sd_samples = math.sqrt(true_words * rate * (1 - rate))
    sd_bytes = sd_samples / rate * 8
    return abs(est_bytes - true_words * 8) <= sigmas * sd_bytes


def rows_by_key(j):
    return {r["key"]: r for r in j["rows"]}


def test_synthetic():
    rate = 1e-3
    files = {
        "memprof": os.path.join(OUT, "leak.mpt"),
        "memprof-lz4": os.path.join(OUT, "leak-lz4.mpt"),
        "ctf": os.path.join(OUT, "leak.ctf"),
    }
    truth = gen("memprof", files["memprof"])
    gen("memprof", files["memprof-lz4"], "--compress")
    gen("ctf", files["ctf"])
    rc, cc, text = checker_counts(files["ctf"])
    check("synthetic CTF passes mtctf_check", rc == 0 and "viewer rules: ok" in text, text)
    tops = {}
    for label, path in files.items():
        j = tool_json("top", "--json", path)
        tops[label] = j
        rows = rows_by_key(j)
        for site, words in truth.items():
            if site == "samples":
                continue
            check("top %s within 4.5 sd of true volume (%s)" % (site, label),
                  site in rows and within(rows[site]["alloc_bytes"], words, rate),
                  "%s vs %d" % (rows.get(site, {}).get("alloc_bytes"), words * 8))
        check("top sample total = generator's (%s)" % label,
              j["total"]["samples"] == truth["samples"])
        check("top live at end: churn 0, leak and static all (%s)" % label,
              rows["Churn.tmp"]["live_bytes"] == 0
              and rows["Leak.grow"]["live_bytes"] == rows["Leak.grow"]["alloc_bytes"]
              and rows["Static.init"]["live_bytes"] == rows["Static.init"]["alloc_bytes"])
        check("top promoted: only the leak (%s)" % label,
              rows["Leak.grow"]["promoted_bytes"] == rows["Leak.grow"]["alloc_bytes"]
              and rows["Churn.tmp"]["promoted_bytes"] == 0)
        lk = tool_json("leaks", "--json", path)
        check("leaks ranks Leak.grow first (%s)" % label,
              lk["sites"] and lk["sites"][0]["site"] == "Leak.grow"
              and lk["sites"][0]["r2"] > 0.95, json.dumps(lk["sites"][:2]))
        s0 = lk["sites"][0]
        # Leak: 21 words per 100 us -> 1.68 MB/s.
        check("leaks slope of Leak.grow ~ 1.68 MB/s (%s)" % label,
              abs(s0["slope_bytes_per_s"] - 1.68e6) < 0.1 * 1.68e6, str(s0["slope_bytes_per_s"]))
        check("leaks window survivors ~ half of the leak (%s)" % label,
              abs(s0["window_survivor_bytes"] - s0["live_end_bytes"] / 2) < 0.1 * s0["live_end_bytes"])
        check("leaks: no other site scores (%s)" % label, len(lk["sites"]) == 1)
        # folded total = top total.
        r = tool("folded", path)
        tot = sum(int(l.rsplit(" ", 1)[1]) for l in r.stdout.splitlines())
        check("folded total = top total (%s)" % label,
              abs(tot - j["total"]["alloc_bytes"]) <= 3, "%d vs %s" % (tot, j["total"]["alloc_bytes"]))
        check("folded stacks are root first (%s)" % label,
              any(l.startswith("Main.main;Leak.run;Leak.grow ") for l in r.stdout.splitlines()))
    check("memprof, LZ4 and CTF give identical top",
          tops["memprof"]["rows"] == tops["memprof-lz4"]["rows"] == tops["ctf"]["rows"])
    test_filters(files["memprof"], truth)
    test_pprof(files["memprof"], "synthetic-memprof")
    test_timeline(files["memprof"])
    test_flamegraph(files["memprof"])
    test_diff(files["memprof"])
    test_info_memprof(files["memprof"], files["memprof-lz4"], truth)
    test_ctf_from_memprof(files["memprof"], tops["memprof"])
    # Version 2 merges the two streams (domains) of this trace, moving the
    # times of domain 1 later where they would go backwards: settings on
    # domains or lifetimes need version 3, which keeps both.
    test_filtered_exports(files["memprof"], "synthetic", (
        ["--min-size", "100"],
        ["--allocated", "5s,8s", "--ignore", "Churn", "--domain", "0"],
        ["--live", "2s,", "--hide", "^Leak.grow", "--source", "major"]))
    test_filtered_exports(files["memprof"], "synthetic", (
        ["--min-size", "100"],
        ["--collected", ",10s", "--min-lifetime", "1ms", "--hide", "^Leak.grow"],
        ["--domain", "1", "--allocated", "1s,"]), "3")
    test_ctf_v3_export(files["memprof"], "synthetic")
    check("--source external = Ext.buffer in CTF too (source 2)",
          keys("--source", "external", files["ctf"]) == {"Ext.buffer"})
    test_example(files["memprof"], tops["memprof"])
    test_ctf_v3(files["ctf"], tops["ctf"])
    test_long_ctf()
    return files


def test_empty_stacks():
    """Allocations with no OCaml frame (empty stack), as real runtime traces
    contain; the first allocation of the trace is one, so the CTF writer
    starts from an empty backtrace (it once applied an offset to a null
    pointer there, a UBSan report under check-asan)."""
    rate = 1e-3
    for fmt in ("memprof", "ctf"):
        path = os.path.join(OUT, "empty-stacks.%s" % fmt)
        truth = gen(fmt, path, "--empty-stacks", "--steps", "20000")
        t = rows_by_key(tool_json("top", "--json", "-n", "0", path))
        row = t.get("<no backtrace>")
        check("empty-stack allocations: one <no backtrace> row within 4.5 sd (%s)" % fmt,
              row is not None and within(row["alloc_bytes"], truth["<no-backtrace>"], rate),
              "%s vs %d words" % (row, truth["<no-backtrace>"]))
        out = os.path.join(OUT, "empty-stacks-export.%s.ctf" % fmt)
        r = tool("ctf", "-o", out, path)
        rc, cc, text = checker_counts(out)
        check("empty-stack allocations: ctf export passes mtctf_check, no sanitizer report (%s)" % fmt,
              r.returncode == 0 and "runtime error" not in r.stderr and rc == 0
              and "viewer rules: ok" in text, r.stderr + text[-300:])
        r = tool("top", "--json", "-n", "0", out)
        t2 = rows_by_key(json.loads(r.stdout)) if r.returncode == 0 else {}
        check("empty-stack allocations: export keeps the <no backtrace> row (%s)" % fmt,
              t2.get("<no backtrace>") == row, "%s vs %s" % (t2.get("<no backtrace>"), r.stderr))


def test_example(path, top):
    r = run([os.path.join(BUILD, "sites"), path])
    got = {}
    for line in r.stdout.splitlines():
        v, _, fn = line.split(None, 2)
        got[fn] = int(v)
    want = {row["key"]: row["alloc_bytes"] for row in top["rows"]}
    check("reader API example (examples/sites.c) agrees with top", r.returncode == 0 and got == want,
          "%s vs %s" % (got, want))


def test_ctf_v3(ctf, top):
    """The checker re-encodes our v2 output as a v3 file (domain field):
    the reader must see the same trace."""
    v3 = os.path.join(OUT, "leak.v3.ctf")
    r = run([sys.executable, CHECKER, "reencode", ctf, "3", "--out", v3])
    j = tool_json("info", "--json", v3)
    check("v3 re-encoding of a synthetic trace: version 3, same top",
          os.path.exists(v3) and j["version"] == 3
          and tool_json("top", "--json", v3)["rows"] == top["rows"], r.stdout + r.stderr)


def test_long_ctf():
    """40 s of simulated time starting 1.98 s into a 2^25 us period: packets
    straddle the 25-bit timestamp wrap (at 31.6 s)."""
    ctf = os.path.join(OUT, "long.ctf")
    mpt = os.path.join(OUT, "long.mpt")
    gen("ctf", ctf, "--steps", "400000", "--rate", "1e-4")
    gen("memprof", mpt, "--steps", "400000", "--rate", "1e-4")
    rc, cc, text = checker_counts(ctf)
    check("long CTF (25-bit time wrap) passes mtctf_check", rc == 0 and "viewer rules: ok" in text, text)
    a = tool_json("top", "--json", "--live", "31s,32s", ctf)
    b = tool_json("top", "--json", "--live", "31s,32s", mpt)
    check("long CTF: live window across the wrap = memprof format", a["rows"] == b["rows"]
          and a["total"]["samples"] > 0)
    ia, ib = tool_json("info", "--json", ctf), tool_json("info", "--json", mpt)
    check("long CTF: duration ~40 s", abs(ia["duration_s"] - 40) < 0.01 and abs(ib["duration_s"] - 40) < 0.01,
          "%s %s" % (ia["duration_s"], ib["duration_s"]))


def keys(*args):
    return set(rows_by_key(tool_json("top", "--json", "-n", "0", *args)))


def test_filters(path, truth):
    check("--focus Leak keeps only Leak.grow", keys("--focus", "^Leak", path) == {"Leak.grow"})
    check("--ignore Leak drops Leak.grow",
          keys("--ignore", "^Leak", path) == {"Churn.tmp", "Static.init", "Ext.buffer"})
    check("--hide Leak.grow moves the site to Leak.run",
          keys("--hide", "Leak.grow", path) == {"Leak.run", "Churn.tmp", "Static.init", "Ext.buffer"})
    check("--source major = Static.init", keys("--source", "major", path) == {"Static.init"})
    check("--domain 1 = Churn.tmp (domain 1)", keys("--domain", "1", path) == {"Churn.tmp"})
    check("--collected = churn and external buffers",
          keys("--collected", ",", path) == {"Churn.tmp", "Ext.buffer"})
    check("--source external = Ext.buffer", keys("--source", "external", path) == {"Ext.buffer"})
    check("--max-lifetime 2ms = only churn", keys("--max-lifetime", "2ms", path) == {"Churn.tmp"})
    check("--min-size 4k = Static.init (8000-byte blocks)",
          keys("--min-size", "4k", path) == {"Static.init"})
    j = tool_json("top", "--json", "--allocated", "5,10", "--focus", "Leak", path)
    full = tool_json("top", "--json", "--focus", "Leak", path)
    frac = j["total"]["samples"] / full["total"]["samples"]
    check("--allocated 5,10 keeps about half of the leak", 0.45 < frac < 0.55, str(frac))
    j = tool_json("top", "--json", "--live", "2.5s,2.6s", "--focus", "Churn", path)
    # churn blocks live in a 100 ms window: ~1000 allocs (+10 straddling) *
    # 11 words * rate 1e-3 ~ 11 samples.
    check("--live window on churn gives ~11 samples", 2 <= j["total"]["samples"] <= 25,
          str(j["total"]["samples"]))
    j = tool_json("top", "--json", "--callers", "Leak.grow", path)
    check("--callers Leak.grow = Leak.run", [r["key"] for r in j["rows"]] == ["Leak.run"])
    j = tool_json("top", "--json", "--callees", "Leak.run", path)
    check("--callees Leak.run = Leak.grow", [r["key"] for r in j["rows"]] == ["Leak.grow"])
    j = tool_json("top", "--json", "--by", "module", path)
    check("--by module", {r["key"] for r in j["rows"]} == {"Leak", "Churn", "Static", "Ext"})
    j = tool_json("top", "--json", "--by", "location", path)
    check("--by location names file:line",
          any(r["key"] == "Leak.grow (leak.ml:3:2-20)" for r in j["rows"]))
    j = tool_json("top", "--json", "--live-at", "peak", path)
    check("--live-at peak: live total near the end (leak grows all run)",
          j["total"]["live_bytes"] >= 0.95 * tool_json("top", "--json", path)["total"]["live_bytes"])
    j = tool_json("top", "--json", "--live-at", "5s", "--focus", "Leak", path)
    check("--live-at 5s: about half of the leak", 0.45 < j["total"]["live_bytes"] /
          full["total"]["live_bytes"] < 0.55)
    r = tool("top", "--focus", "(", path)
    check("bad regex: exit 2 and one-line error", r.returncode == 2 and len(r.stderr.splitlines()) == 1)


def test_timeline(path):
    r = tool("timeline", "--csv", path)
    rows = [l.split(",") for l in r.stdout.splitlines()[1:]]
    check("timeline CSV has rows", r.returncode == 0 and len(rows) >= 100, str(len(rows)))
    live = [float(x[1]) for x in rows]
    check("timeline live grows (leak) and starts with the static data",
          live[-1] > live[len(live) // 2] > live[2] > 7e6)
    heap = [x[3] for x in rows if x[3]]
    check("timeline heap size from major cycles", len(heap) > 50 and float(heap[-1]) > float(heap[0]))
    svg = os.path.join(OUT, "timeline.svg")
    r = tool("timeline", "-o", svg, path)
    text = open(svg).read()
    check("timeline SVG has live, heap, rate, one compaction mark, 100 distinct cycles",
          r.returncode == 0 and 'class="live"' in text and 'class="heap"' in text
          and 'class="rate"' in text and text.count('class="compaction"') == 1
          and text.count('class="peak"') == 1
          and text.count('class="major"') == 100)


def test_flamegraph(path):
    """`flamegraph` writes the report opened on its flame graph (the
    standalone page is retired): the flame tab shown, frames at their
    depths from the root, the icicle from the site at FILE#icicle, the
    measure of --value, and the options the report lacks refused."""
    html = os.path.join(OUT, "flame.html")
    r = tool("flamegraph", "-o", html, path)
    text = open(html).read() if r.returncode == 0 else ""
    check("flamegraph writes the report, opened on the flame graph",
          '"open":{"tab":"flame","metric":"alloc"}' in text and "@JS@" not in text, r.stderr[-300:])
    r = tool("flamegraph", "--lines", "-o", html, path)
    check("flamegraph --lines: a usage error naming folded --lines",
          r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "folded --lines" in r.stderr, r.stderr)
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome:
        check("headless chromium available for the flame graph test", False)
        return
    tool("flamegraph", "-o", html, path)
    with cdp.Browser(chrome) as b:
        for view, depth in (("", {"Main.main": 1, "Leak.run": 2, "Leak.grow": 3}),
                            ("#icicle", {"Leak.grow": 0, "Leak.run": 1, "Main.main": 2})):
            page = b.page(1280, 800)
            page.goto("file://" + html + view, "document.body && document.body.getAttribute('data-ready')",
                      timeout=120)
            kind = "icicle" if view else "flame"
            frames = json.loads(page.eval(
                "JSON.stringify([S.tab, drawn.%s.rects.map(function (q) { return [NAMES[q[3]], q[4], q[1]]; })])" % kind))
            got = {}
            for n, v, dp in frames[1]:
                got.setdefault(n, set()).add(dp)
            ok = frames[0] == kind and all(dp in got.get(n, set()) for n, dp in depth.items())
            leak = [v for n, v, _ in frames[1] if n == "Leak.grow"]
            check("flamegraph: chromium draws the %s view with the expected frames" % kind,
                  ok and leak and leak[0] > 1e7 and not page.errors, "%s %s" % (str(got)[:300], page.errors[:2]))


def test_diff(path):
    noleak = os.path.join(OUT, "noleak.mpt")
    gen("memprof", noleak, "--no-leak")
    j = tool_json("diff", "--json", noleak, path)
    check("diff ranks Leak.grow first", j["rows"][0]["site"] == "Leak.grow"
          and j["rows"][0]["alloc_a"] == 0 and j["rows"][0]["live_delta"] > 1e7)


def test_info_memprof(path, lz4, truth):
    j = tool_json("info", "--json", path)
    check("info memprof: format, domains, GC events",
          j["format"] == "5.3.0+memprof" and len(j["domains"]) == 2
          and j["events"].get("major_cycle") == 150 and j["events"].get("compact_begin") == 1
          and not j["truncated"] and j["samples"] == truth["samples"])
    j2 = tool_json("info", "--json", lz4)
    check("info memprof LZ4 = raw", j2["events"] == j["events"] and j2["samples"] == j["samples"])


def test_ctf_from_memprof(path, top_memprof):
    out = os.path.join(OUT, "from-memprof.ctf")
    r = tool("ctf", "-o", out, path)
    rc, cc, text = checker_counts(out)
    check("memprof -> CTF passes mtctf_check with viewer rules",
          r.returncode == 0 and rc == 0 and "viewer rules: ok" in text, r.stderr + text)
    j = tool_json("top", "--json", out)
    check("memprof -> CTF keeps top's numbers", j["rows"] == top_memprof["rows"])


def test_multidomain():
    """Two-domain v3 file (tests/make_v3_multidomain.py): per-domain decoder
    state, disjoint id ranges, cross-domain collections with negative id
    deltas; then merged into one v2 stream by the ctf export."""
    path = os.path.join(OUT, "multi.v3.ctf")
    r = run([sys.executable, os.path.join(HERE, "make_v3_multidomain.py"),
             os.path.dirname(CHECKER), path, "5000"])
    if r.returncode != 0:
        check("make_v3_multidomain.py", False, r.stderr)
        return
    want = json.loads(r.stdout)
    j = tool_json("info", "--json", path)
    doms = {d["domain"]: d for d in j["domains"]}
    check("v3 multi-domain: per-domain counts",
          j["version"] == 3 and doms[0]["alloc"] == want["A.f"] and doms[1]["alloc"] == want["B.g"]
          and doms[0]["collect"] == want["collected"] and j["unknown_collections"] == 0,
          json.dumps(j["domains"]))
    t = rows_by_key(tool_json("top", "--json", path))
    live_b = 2 * (want["B.g"] - want["collected"])
    check("v3 multi-domain: top samples and live (inlined innermost frame is the site)",
          t["A.f"]["samples"] == want["A.f"] and t["A.f"]["live_samples"] == want["A.f"]
          and t["B.inlined"]["samples"] == 2 * want["B.g"] and t["B.inlined"]["live_samples"] == live_b,
          json.dumps(t)[:300])
    check("v3 multi-domain: --domain 1", keys("--domain", "1", path) == {"B.inlined"})
    v2 = os.path.join(OUT, "multi-merged.v2.ctf")
    r = tool("ctf", "-o", v2, path)
    rc, cc, text = checker_counts(v2)
    check("v3 multi-domain merged into v2 passes mtctf_check with viewer rules",
          r.returncode == 0 and rc == 0 and "viewer rules: ok" in text
          and cc["allocs"] == want["allocs"] and cc["collections"] == want["collected"], text)
    check("merged v2 has the same top as the v3 input",
          tool_json("top", "--json", v2)["rows"] == tool_json("top", "--json", path)["rows"])


def test_runtime_trace():
    """A real trace from the 5.3.0+memprof runtime: tests/leaky.ml leaks
    8 words per step in leak_step and churns 11 in churn_step.  Needs the
    patched compiler (OCAMLMEMPROF_BIN, default ../_install/bin)."""
    bindir = os.environ.get("OCAMLMEMPROF_BIN", os.path.join(TOOLS, "..", "_install", "bin"))
    ocamlopt = os.path.join(bindir, "ocamlopt")
    if not os.access(ocamlopt, os.X_OK):
        print("skip runtime-trace tests: no %s (build the compiler first)" % ocamlopt)
        return
    work = os.path.join(OUT, "leaky")
    os.makedirs(work, exist_ok=True)
    shutil.copy(os.path.join(HERE, "leaky.ml"), work)
    r = run([ocamlopt, "-g", "-I", "+unix", "unix.cmxa", "leaky.ml", "-o", "leaky.exe"], cwd=work)
    check("compile tests/leaky.ml with the patched compiler", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    steps, rate = 300000, 1e-3
    for compress in ("0", "1"):
        trace = os.path.join(work, "leaky-%s.trace" % compress)
        env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=%g,memprof_seed=7,"
                   "memprof_compress=%s" % (trace, rate, compress))
        r = run([os.path.join(work, "leaky.exe"), str(steps)], env=env, cwd=work)
        check("traced run of leaky.exe (compress=%s)" % compress,
              r.returncode == 0 and os.path.exists(trace), r.stderr[-300:])
        if r.returncode != 0 or not os.path.exists(trace):
            continue
        j = tool_json("info", "--json", trace)
        check("runtime trace: memprof format, not truncated, samples > 0 (compress=%s)" % compress,
              j["format"] == "5.3.0+memprof" and not j["truncated"] and j["samples"] > 0,
              json.dumps(j)[:300])
        t = tool_json("top", "--json", "-n", "0", trace)
        rows = {r_["key"]: r_ for r_ in t["rows"]}
        leak = [v for k, v in rows.items() if "leak_step" in k]
        churn = [v for k, v in rows.items() if "churn_step" in k]
        check("runtime trace: leak_step volume within 4.5 sd of 8 words/step (compress=%s)" % compress,
              len(leak) == 1 and within(leak[0]["alloc_bytes"], 8 * steps, rate),
              str(leak and leak[0]["alloc_bytes"]) + " vs %d" % (64 * steps))
        check("runtime trace: churn_step volume within 4.5 sd of 11 words/step (compress=%s)" % compress,
              len(churn) == 1 and within(churn[0]["alloc_bytes"], 11 * steps, rate),
              str(churn and churn[0]["alloc_bytes"]) + " vs %d" % (88 * steps))
        check("runtime trace: leak all live at end, churn none (compress=%s)" % compress,
              leak and churn and leak[0]["live_bytes"] == leak[0]["alloc_bytes"]
              and churn[0]["live_bytes"] < 0.05 * churn[0]["alloc_bytes"])
        lk = tool_json("leaks", "--json", trace)
        check("runtime trace: leaks ranks leak_step first (compress=%s)" % compress,
              lk["sites"] and "leak_step" in lk["sites"][0]["site"], json.dumps(lk["sites"][:2])[:300])
        test_pprof(trace, "runtime-compress-" + compress)
        if compress == "1":
            test_filtered_exports(trace, "runtime", (
                ["--min-size", "32", "--ignore", "churn_step"],
                ["--allocated", "20ms,", "--source", "minor"],
                ["--live", "30ms,", "--hide", "leak_step", "--min-lifetime", "0"]))
        out = os.path.join(work, "leaky.ctf")
        r = tool("ctf", "-o", out, trace)
        rc, cc, text = checker_counts(out)
        check("runtime trace -> CTF passes mtctf_check with viewer rules (compress=%s)" % compress,
              r.returncode == 0 and rc == 0 and "viewer rules: ok" in text, r.stderr + text[-300:])
    test_runtime_lwt(ocamlopt, work)
    lwt_tests.test_lwt_threads(check, tool, tool_json, run, work, HERE, ocamlopt, os.path.join(work, "leaky-1.trace"))
    trace = os.path.join(work, "leaky-rate0.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=0,memprof_snapshot_at_exit=1" % trace)
    r = run([os.path.join(work, "leaky.exe"), "20000"], env=env, cwd=work)
    check("traced run of leaky.exe at memprof_rate=0 with a snapshot at exit",
          r.returncode == 0 and os.path.exists(trace), r.stderr[-300:])
    if r.returncode == 0:
        rate_zero_checks(trace, "runtime")
    test_runtime_dune_module(ocamlopt, work)
    test_runtime_domains(ocamlopt, work)
    test_runtime_marshal(ocamlopt, work)
    test_runtime_follow(ocamlopt, work)
    types_tests.test_types(check, tool, run, OUT, HERE, ocamlopt,
                           os.path.join(TOOLS, "ocaml-memprof-types"))
    snaptypes_tests.test_snapshot_types(check, tool, run, OUT, HERE, ocamlopt,
                                        os.path.join(TOOLS, "ocaml-memprof-types"))


def test_presets_synthetic(path):
    """--preset and --presets-file on a synthetic trace: a user preset hides
    what it names, in any order with --presets-file and with --hide; bad
    names and files give one line naming them, exit 2."""
    def keys(*args):
        return {r_["key"] for r_ in tool_json("top", "--json", *args)["rows"]}
    presets = os.path.join(OUT, "presets")
    with open(presets, "w") as f:
        f.write("# the test's presets\n\nleak = ^Leak\\.grow\nchurn=^Churn\n")
    check("--preset from --presets-file hides its frames (either order)",
          keys("--presets-file", presets, "--preset", "leak", path) ==
          keys("--preset", "leak", "--presets-file", presets, path) ==
          keys("--hide", "^Leak\\.grow", path) == {"Leak.run", "Churn.tmp", "Static.init", "Ext.buffer"})
    both = keys("--preset", "leak,churn", "--presets-file", presets, path)
    check("--preset A,B combines presets, and with --hide",
          both == keys("--preset", "leak", "--preset", "churn", "--presets-file", presets, path)
          and "Leak.grow" not in both and "Churn.tmp" not in both
          and keys("--preset", "leak", "--hide", "^Churn", "--presets-file", presets, path) == both, str(both))
    xdg = os.path.join(OUT, "xdg")
    os.makedirs(os.path.join(xdg, "ocaml-memprof"), exist_ok=True)
    shutil.copy(presets, os.path.join(xdg, "ocaml-memprof", "presets"))
    r = run([TOOL, "top", "--json", "--preset", "churn", path], env=dict(os.environ, XDG_CONFIG_HOME=xdg))
    check("--preset from $XDG_CONFIG_HOME/ocaml-memprof/presets",
          r.returncode == 0 and "Churn.tmp" not in {r_["key"] for r_ in json.loads(r.stdout)["rows"]}, r.stderr)
    bad = os.path.join(OUT, "presets-bad")
    badre = os.path.join(OUT, "presets-badre")
    with open(bad, "w") as f:
        f.write("ok = ^A\nthis line has no equals sign\n")
    with open(badre, "w") as f:
        f.write("x = (unclosed\n")
    for args, text in ((["--preset", "nosuch"], "unknown preset 'nosuch' for --preset: known presets are "
                        "lwt, async, eio, stdlib, runtime"),
                       (["--presets-file", bad], bad + ":2: expected 'name = regex'"),
                       (["--presets-file", badre, "--preset", "x"], badre + ":1: bad regex for preset 'x'"),
                       (["--presets-file", os.path.join(OUT, "nosuch-presets")], "cannot read presets file")):
        for cmd in ("top", "leaks", "retainers"):
            r = tool(cmd, *(args + [path]))
            check("%s %s: exit 2, one line: %s" % (cmd, " ".join(args), text[-40:]),
                  r.returncode == 2 and len(r.stderr.splitlines()) == 1 and text in r.stderr,
                  "rc=%d %r" % (r.returncode, r.stderr))


HINT = re.compile(r"^hint: (\d+) of the top (\d+) sites are in Lwt's code; try --preset lwt$", re.M)


def test_runtime_lwt(ocamlopt, work):
    """A program on a miniature Lwt (tests/lwt_like: frames named as Lwt's):
    top, leaks and flamegraph print the one-line hint to --preset lwt on
    stderr (--json and --csv output unchanged), not with the preset or a
    --hide, nor on a program without Lwt (tests/leaky.ml); the preset
    leaves no Lwt frame as a site but Lwt_main.run's (which it keeps: the
    loop's own allocation is not the program entry's)."""
    src = os.path.join(HERE, "lwt_like")
    for f in ("lwt.ml", "lwt_io.ml", "lwt_main.ml", "server.ml"):
        shutil.copy(os.path.join(src, f), work)
    r = run([ocamlopt, "-g", "lwt.ml", "lwt_io.ml", "lwt_main.ml", "server.ml", "-o", "server.exe"], cwd=work)
    check("compile tests/lwt_like (a server on a miniature Lwt)", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    trace = os.path.join(work, "server.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=1e-3,memprof_seed=1" % trace)
    r = run([os.path.join(work, "server.exe"), "20000"], env=env, cwd=work)
    check("traced run of server.exe", r.returncode == 0 and r.stdout.strip() == "60000", r.stderr[-300:])
    if r.returncode != 0:
        return
    html = os.path.join(work, "server-flame.html")
    for args in (["top"], ["top", "--json"], ["top", "--csv"], ["leaks"], ["leaks", "--json"],
                 ["flamegraph", "-o", html]):
        r = tool(*(args + [trace]))
        m = HINT.search(r.stderr)
        ok = r.returncode == 0 and m and int(m.group(1)) * 2 >= int(m.group(2)) and len(HINT.findall(r.stderr)) == 1
        if "--json" in args:
            try:
                json.loads(r.stdout)
            except ValueError:
                ok = False
        if "--csv" in args:
            ok = ok and r.stdout.startswith("key,file,line,")
        check("%s on an Lwt program: one hint line on stderr (%s), output intact"
              % (" ".join(args[:2]), m.group(0)[6:30] if m else "none"), ok, r.stderr[-300:])
    for args in (["top", "--preset", "lwt"], ["top", "--hide", "^Lwt"], ["leaks", "--preset", "lwt,stdlib"],
                 ["flamegraph", "--preset", "lwt", "-o", html]):
        r = tool(*(args + [trace]))
        check("%s on the Lwt program: no hint" % " ".join(args[:3]),
              r.returncode == 0 and "hint:" not in r.stderr, r.stderr[-300:])
    # the preset keeps Lwt_main.run: the miniature loop's own allocation
    # (its queue of paused callbacks, the promises it resolves) is its,
    # not the program entry's (Server, the module that calls it)
    rows = tool_json("top", "--json", "-n", "0", "--preset", "lwt", trace)["rows"]
    share = lambda keep: sum(r_["alloc_bytes"] for r_ in rows if keep(r_["key"])) / sum(r_["alloc_bytes"] for r_ in rows)
    loop, entry = share(lambda k: k.startswith("Lwt_main.run")), share(lambda k: k == "Server")
    check("top --preset lwt: the loop's own allocation goes to Lwt_main.run (%.1f %%), not to the entry "
          "Server (%.1f %%)" % (100 * loop, 100 * entry), loop > 0.5 and entry < 0.05)
    # hiding is decided per stack: library code (a frame of any preset)
    # called by a hidden frame or by the kept Lwt_main.run is hidden with
    # it; the program's frames never are.  The rule, applied here to the
    # folded stacks, gives top --preset lwt's table to the byte.
    lib = [re.compile(r) for r in (r"^Lwt(_[a-z0-9_]+)?(\.|__|$)", r"^Async(_[a-z0-9_]+)?(\.|__|$)",
                                   r"^Eio(_[a-z0-9_]+)?(\.|__|$)",
                                   r"^(Stdlib|Camlinternal[A-Za-z]*|Std_exit)(\.|__|$)", r"^caml_|^<unknown>$")]
    keep = re.compile(r"^Lwt_main\.run(\.|$)")
    want = {}
    for line in tool("folded", trace).stdout.splitlines():
        st, v = line.rsplit(" ", 1)
        state, site = 0, None
        for fr in st.split(";"):          # outermost first
            if keep.search(fr):
                state = 2
            elif lib[0].search(fr) or (state and any(r_.search(fr) for r_ in lib)):
                state = 1
            else:
                state = 0
            if state != 1:
                site = fr
        want[site] = want.get(site, 0) + int(v)
    got = {r_["key"]: r_["alloc_bytes"] for r_ in rows}
    absorbed = [r_["key"] for r_ in tool_json("top", "--json", "-n", "0", trace)["rows"] if r_["key"] not in got]
    check("top --preset lwt = the per-stack rule on the folded stacks (%d sites; gone besides Lwt's: %s)"
          % (len(got), [k for k in absorbed if not k.startswith("Lwt")][:3]),
          want == got and [k for k in absorbed if k.startswith("Stdlib")] != [],
          str(sorted((k, want.get(k), got.get(k)) for k in set(want) | set(got) if want.get(k) != got.get(k))[:4]))
    rows = tool_json("top", "--json", "-n", "0", "--preset", "lwt,stdlib", trace)["rows"]
    keys = [r_["key"] for r_ in rows]
    check("top --preset lwt,stdlib: no Lwt or Stdlib site left but Lwt_main.run's, the loop first (%s)" % keys[:2],
          keys and not [k for k in keys if re.match(r"Lwt|Stdlib", k) and not k.startswith("Lwt_main.run")]
          and keys[0].startswith("Lwt_main.run"), str(keys[:5]))
    leaky = os.path.join(work, "leaky-1.trace")
    if os.path.exists(leaky):
        for args in (["top"], ["leaks"], ["flamegraph", "-o", html]):
            r = tool(*(args + [leaky]))
            check("%s on a program without Lwt: no hint" % args[0],
                  r.returncode == 0 and "hint:" not in r.stderr, r.stderr[-300:])


DUNE_MAIN = """let table : (int, string) Hashtbl.t = Hashtbl.create 16
let () = for i = 1 to 5000 do Hashtbl.replace table i (String.make 50 'x') done
let () = Printf.printf "%d\\n" (Hashtbl.length table)
"""


def test_runtime_dune_module(ocamlopt, work):
    """A dune executable's main module, compiled as dune does (main.ml to
    dune__exe__Main.cmx: symbol camlDune__exe__Main), holding 5000 strings
    in a global table: retainers names that root Main (before: its
    address)."""
    d = os.path.join(work, "dune")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "main.ml"), "w").write(DUNE_MAIN)
    r = run([ocamlopt, "-g", "-c", "-o", "dune__exe__Main.cmx", "main.ml"], cwd=d)
    if r.returncode == 0:
        r = run([ocamlopt, "-g", "-o", "main.exe", "dune__exe__Main.cmx"], cwd=d)
    trace = os.path.join(d, "main.trace")
    if r.returncode == 0:
        env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=0,memprof_snapshot_at_exit=1" % trace)
        r = run([os.path.join(d, "main.exe")], env=env, cwd=d)
    check("dune-style main module: compiled as dune__exe__Main and traced", r.returncode == 0, r.stderr[-300:])
    if r.returncode != 0:
        return
    r = tool("retainers", "--json", trace)
    j = strict_json(r.stdout)
    top = j["roots"][0] if j and j["roots"] else {}
    check("dune-style main module: the top root is global Main (its table, over 250 kB)",
          top.get("kind") == "global" and top.get("label") == "Main" and top.get("retained", 0) > 250000,
          "%s %r" % (top, r.stderr[-200:]))


def test_runtime_follow(ocamlopt, work):
    """top --follow on a running 4-domain program (tests/follow.ml): several
    refreshes while the trace is written, exit 0 when the program ends, and
    the last table equals top on the finished trace."""
    shutil.copy(os.path.join(HERE, "follow.ml"), work)
    r = run([ocamlopt, "-g", "-I", "+unix", "unix.cmxa", "follow.ml", "-o", "follow.exe"], cwd=work)
    check("compile tests/follow.ml", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    trace = os.path.join(work, "follow.trace")
    if os.path.exists(trace):
        os.remove(trace)
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=1e-4,memprof_flush_ms=100" % trace)
    prog = subprocess.Popen([os.path.join(work, "follow.exe"), "3"], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        r = run([TOOL, "top", "--follow", "--interval", "300ms", "--json", "-n", "0", trace], timeout=120)
    finally:
        prog.wait(timeout=120)
    docs = r.stdout.split("--- refresh ")
    last = docs[-1].split("\n", 1)[1] if len(docs) > 1 else docs[-1]
    final = tool_json("top", "--json", "-n", "0", trace)
    try:
        got = json.loads(last)
    except ValueError:
        got = None
    first = json.loads(docs[0]) if docs[0].strip().startswith("{") else {"total": {"samples": -1}}
    check("top --follow on a 4-domain program: exits 0 after several refreshes",
          r.returncode == 0 and len(docs) >= 3, "rc=%d refreshes=%d %s" % (r.returncode, len(docs), r.stderr[-300:]))
    check("top --follow: the last refresh equals top on the final trace", got == final,
          "%s vs %s" % (str(got)[-300:], str(final)[-300:]))
    check("top --follow: the first refresh saw part of the run",
          0 <= first["total"]["samples"] < final["total"]["samples"],
          "%s of %s samples" % (first["total"]["samples"], final["total"]["samples"]))
    # The trace deleted while the program runs: top --follow still ends
    # when the program does.
    trace = os.path.join(work, "follow-deleted.trace")
    if os.path.exists(trace):
        os.remove(trace)
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=1e-4,memprof_flush_ms=100" % trace)
    prog = subprocess.Popen([os.path.join(work, "follow.exe"), "2.5"], env=env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.5)
    p = subprocess.Popen([TOOL, "top", "--follow", "--json", "-n", "5", trace],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(1)
    os.remove(trace)
    prog.wait(timeout=120)
    out, err, latency = end_latency(p, time.time())
    check("top --follow on a program whose trace is deleted while it runs: ends within 2 s of"
          " the program's exit (%s), exit 0, one note 'was deleted'"
          % (latency_text(latency)),
          latency is not None and latency <= 2 and p.returncode == 0
          and len(err.splitlines()) == 1 and "was deleted" in err, "rc=%s %r" % (p.returncode, err[-300:]))


def test_filtered_exports(path, label, settings, version="2"):
    """Filters apply to exports: for each filter setting, `ctf` with the
    filters then `top --json` on the export equals `top --json` with the
    same filters on the original (time bounds are lower bounds in whole
    microseconds, which CTF's rounding down to microseconds keeps exact),
    the export passes mtctf_check with the viewer rules, and pprof with the
    filters has the same alloc/inuse totals as the export's pprof; `info`
    with the filters counts what passes."""
    for k, flt in enumerate(settings):
        out = os.path.join(OUT, "filtered-%s-%d.v%s.ctf" % (label, k, version))
        r = tool("ctf", "--format-version", version, *(flt + ["-o", out, path]))
        a = tool_json("top", "--json", "-n", "0", *(flt + [path]))
        b = tool_json("top", "--json", "-n", "0", *(flt + [out])) if r.returncode == 0 else {}
        rc, cc, text = checker_counts(out)
        check("ctf v%s %s (%s): top on the export = top with the filters (%d samples of %d),"
              " mtctf_check ok" % (version, " ".join(flt), label, a["total"]["samples"],
                                   tool_json("top", "--json", path)["total"]["samples"]),
              r.returncode == 0 and a["rows"] == b.get("rows") and a["total"] == b.get("total")
              and rc == 0 and "viewer rules: ok" in text and 0 < cc["allocs"],
              r.stderr + str(a["total"]) + str(b.get("total")) + text[-200:])
        if version != "2":
            continue
        if shutil.which("go"):
            pa = os.path.join(OUT, "filtered-%s-%d.pb.gz" % (label, k))
            pb = os.path.join(OUT, "filtered-%s-%d-export.pb.gz" % (label, k))
            tool("pprof", *(flt + ["-o", pa, path]))
            tool("pprof", "-o", pb, out)
            tot = [go_total(p_, i_) for p_ in (pa, pb) for i_ in ("alloc_space", "inuse_space")]
            check("pprof %s (%s): totals = the export's = top's (%s)" % (" ".join(flt), label, tot),
                  tot == [a["total"]["alloc_bytes"], a["total"]["live_bytes"]] * 2)
        j = tool_json("info", "--json", *(flt + [path]))
        fj = j.get("filter", {})
        check("info %s (%s): says a filter is applied, counts what passes" % (" ".join(flt), label),
              fj.get("samples") == a["total"]["samples"]
              and fj.get("estimated_allocated_bytes") == a["total"]["alloc_bytes"]
              and fj.get("blocks") == sum(x["blocks"] for x in a["rows"])
              and fj.get("options") == " ".join(flt), json.dumps(fj))


def test_ctf_v3_export(path, label):
    """ctf --format-version 3: one stream per domain; our reader reads the
    export back with the same event counts (per domain too) and the same
    top, and mtctf_check accepts it with the viewer rules."""
    out = os.path.join(OUT, "v3-%s.ctf" % label)
    r = tool("ctf", "--format-version", "3", "-o", out, path)
    a, b = tool_json("info", "--json", path), tool_json("info", "--json", out) if r.returncode == 0 else {}
    rc, cc, text = checker_counts(out)
    ev = a["events"]
    per_dom = lambda j: sorted((d["domain"], d.get("alloc", 0), d.get("samples", 0)) for d in j["domains"]
                               if d.get("alloc"))
    check("ctf --format-version 3 (%s): version 3, same alloc/promote/collect counts (%d/%d/%d),"
          " per domain too, read back and by mtctf_check (viewer rules ok)"
          % (label, ev["alloc"], ev["promote"], ev["collect"]),
          r.returncode == 0 and b.get("version") == 3 and rc == 0 and "viewer rules: ok" in text
          and all(b["events"][k] == ev[k] for k in ("alloc", "promote", "collect"))
          and (cc["allocs"], cc["promotions"], cc["collections"]) == (ev["alloc"], ev["promote"], ev["collect"])
          and per_dom(a) == per_dom(b), r.stderr + text[-300:] + str(b.get("events")))
    ta, tb = tool_json("top", "--json", "-n", "0", path), tool_json("top", "--json", "-n", "0", out)
    check("ctf --format-version 3 (%s): same top (rows and totals)" % label,
          ta["rows"] == tb["rows"] and ta["total"] == tb["total"], str(ta["total"]) + str(tb["total"]))


def lz4_frame_ends(data):
    """Offsets where the LZ4 frames of a 5.3.0+memprof file end."""
    ends, off = [], 0
    while off + 7 <= len(data) and data[off:off + 4] == b"\x04\x22\x4d\x18":
        flg = data[off + 4]
        p = off + 7 + (8 if flg & 8 else 0) + (4 if flg & 1 else 0)
        while True:
            bs = int.from_bytes(data[p:p + 4], "little")
            p += 4
            if bs == 0:
                break
            p += (bs & 0x7FFFFFFF) + (4 if flg & 16 else 0)
        p += 4 if flg & 4 else 0
        ends.append(p)
        off = p
    return ends


def end_latency(p, since):
    """Waits at most 10 s for the `top --follow` process [p] to end: its
    stdout, stderr, and how long after [since] it ended (None: it did not,
    and was killed)."""
    try:
        out, err = p.communicate(timeout=10)
        return out, err, time.time() - since
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        return out, err, None


def latency_text(latency):
    return "not within 10 s" if latency is None else "%.2f s" % latency


def follow_finish(p):
    """Waits for a `top --follow --json` process [p]: its stderr and the
    JSON of its last refresh (None when unreadable)."""
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    docs = out.split("--- refresh ")
    last = docs[-1].split("\n", 1)[1] if len(docs) > 1 else docs[-1]
    try:
        return err, json.loads(last)
    except ValueError:
        return err, None


def follow_growing(label, data, cuts, writer, final_path):
    """top --follow --stats on a file that does not exist at first, then
    grows to cuts[0], then by data[cuts[i]:cuts[i+1]] every 0.25 s (the
    writer: the process whose pid is in the header, ended by the caller at
    the end); returns (rc, last refresh JSON, per-refresh (bytes, events),
    stderr)."""
    path = os.path.join(OUT, "grow-" + label)
    if os.path.exists(path):
        os.remove(path)
    cuts = [0] + cuts
    p = subprocess.Popen([TOOL, "top", "--follow", "--stats", "--interval", "100ms", "--json",
                          "-n", "0", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for a, b in zip(cuts, cuts[1:]):
        time.sleep(0.25)
        with open(path, "ab") as f:
            f.write(data[a:b])
    time.sleep(0.25)
    writer()
    err, got = follow_finish(p)
    work = [(int(b), int(e)) for b, e in
            re.findall(r"refresh: (\d+) bytes read, (\d+) events decoded", err)]
    return p.returncode, got, work, err


def test_follow_incremental():
    """--follow reads only what was appended: synthetic traces (LZ4 frames,
    raw chunks, CTF packets) grow in pieces cut inside records; each
    refresh reads no more than the bytes appended since the previous one,
    every byte is read once, every event decoded once, and the last refresh
    equals top on the whole file.  The LZ4 pieces end in the middle of a
    frame and the next piece completes it and starts the next frame; a
    trace whose writer dies without an end record is read to its last
    complete record; traces may appear later."""
    for label, fmt, extra in (("lz4.mpt", "memprof", ["--compress"]), ("raw.mpt", "memprof", []),
                              ("ctf", "ctf", [])):
        src = os.path.join(OUT, "grow-src-" + label)
        # The writer: a process that ends with the file (CTF has no end
        # record: its end is seen when the writer has gone).
        sleeper = subprocess.Popen(["sleep", "60"])
        gen(fmt, src, "--steps", "200000", "--pid", str(sleeper.pid), *extra)
        data = open(src, "rb").read()
        if label == "lz4.mpt":
            ends = lz4_frame_ends(data)
            mids = [(a + b) // 2 for a, b in zip(ends, ends[1:])]
            cuts = mids[::max(1, len(mids) // 10)] + [len(data)]
        else:
            cuts = [len(data) * k // 11 + 7 for k in range(1, 11)] + [len(data)]
        def kill():
            sleeper.kill()
            sleeper.wait()
        rc, got, work, err = follow_growing(label, data, cuts, kill, src)
        final = tool_json("top", "--json", "-n", "0", src)
        info = tool_json("info", "--json", src)
        nevents = sum(info["events"].values())
        piece = max(b - a for a, b in zip(cuts, cuts[1:]))
        # A refresh reads what was appended since the previous one: a piece,
        # or a few when the machine is loaded (CTF: whole packets of up to
        # 32 KiB); never the whole file.
        bound = 3 * piece if fmt == "memprof" else piece + 32768
        check("--follow on a growing %s trace (%d pieces, cut inside records): exit 0, last"
              " refresh = top on the whole file" % (label, len(cuts)),
              rc == 0 and got is not None and got["rows"] == final["rows"]
              and got["total"] == final["total"], "rc=%d %s" % (rc, err[-200:]))
        check("--follow on a growing %s trace: every byte read once (%d = %d), every event"
              " decoded once (%d = %d), at most %d bytes per refresh (bound %d; old"
              " behaviour: the whole file, %d, at each refresh)"
              % (label, sum(b for b, _ in work), len(data), sum(e for _, e in work), nevents,
                 max([b for b, _ in work] or [0]), min(bound, len(data) // 2), len(data)),
              sum(b for b, _ in work) == len(data) and sum(e for _, e in work) == nevents
              and max([b for b, _ in work] or [0]) <= min(bound, len(data) // 2)
              and len([b for b, _ in work if b]) >= 3, str(work)[:300])
    # Several traces in a directory, the second appearing (cut inside its
    # header first) while the first grows: merged as top DIR merges them.
    d = os.path.join(OUT, "grow-dir")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    sleeper = subprocess.Popen(["sleep", "60"])
    srcs = []
    for k in range(2):
        src = os.path.join(OUT, "grow-dir-src-%d.mpt" % k)
        gen("memprof", src, "--steps", "100000", "--pid", str(sleeper.pid), "--seed", str(k + 5),
            "--compress", *(["--exe", "/bin/second"] if k else []))
        srcs.append(open(src, "rb").read())
    a_path, b_path = os.path.join(d, "a.trace"), os.path.join(d, "b.trace")
    open(a_path, "wb").write(srcs[0][:len(srcs[0]) // 3])
    p = subprocess.Popen([TOOL, "top", "--follow", "--stats", "--interval", "100ms", "--json",
                          "-n", "0", "--group", "exe", d], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    steps = [(a_path, srcs[0][len(srcs[0]) // 3:2 * len(srcs[0]) // 3]), (b_path, srcs[1][:5]),
             (b_path, srcs[1][5:len(srcs[1]) // 2]), (a_path, srcs[0][2 * len(srcs[0]) // 3:]),
             (b_path, srcs[1][len(srcs[1]) // 2:])]
    for path, piece in steps:
        time.sleep(0.3)
        with open(path, "ab") as f:
            f.write(piece)
    time.sleep(0.3)
    sleeper.kill()
    sleeper.wait()
    err, got = follow_finish(p)
    final = tool_json("top", "--json", "-n", "0", "--group", "exe", d)
    work = [int(b) for b in re.findall(r"refresh: (\d+) bytes read", err)]
    check("--follow DIR --group exe: a trace appearing later (cut inside its header first)"
          " joins its group; last refresh = top DIR; every byte read once (%d = %d)"
          % (sum(work), sum(map(len, srcs))),
          p.returncode == 0 and got is not None
          and [(g["executable"], g["rows"], g["total"]) for g in got]
          == [(g["executable"], g["rows"], g["total"]) for g in final]
          and sum(work) == sum(map(len, srcs)) and len(final) == 2,
          "rc=%d %s" % (p.returncode, err[-300:]))
    # A writer that dies: pid of a short-lived process, no end record.
    sleeper = subprocess.Popen(["sleep", "60"])
    src = os.path.join(OUT, "grow-src-killed.mpt")
    gen("memprof", src, "--steps", "200000", "--pid", str(sleeper.pid), "--compress")
    data = open(src, "rb").read()
    ends = lz4_frame_ends(data)
    cut = (ends[-4] + ends[-3]) // 2
    short = os.path.join(OUT, "grow-src-killed-cut.mpt")
    open(short, "wb").write(data[:cut])
    cuts = [len(data) // 4, len(data) // 2, cut]

    def kill():
        sleeper.kill()
        sleeper.wait()
    rc, got, work, err = follow_growing("killed.mpt", data, cuts, kill, short)
    final = tool_json("top", "--json", "-n", "0", short)
    check("--follow: writer killed before its end record: exit 0, last refresh = top on the"
          " cut file (read to its last complete frame)",
          rc == 0 and got is not None and got["rows"] == final["rows"]
          and got["total"] == final["total"] and sum(b for b, _ in work) == cut,
          "rc=%d %s %s" % (rc, str(work), err[-300:]))


FILE_CHANGE_NOTES = {"deleted": "was deleted", "replaced": "was replaced by another file",
                     "truncated": "was truncated below what was read"}


def change_followed_file(path, how, writer_file, rest):
    """Delete, replace (rename another file over it) or truncate the trace
    at [path]; the writer (open file [writer_file]) then writes [rest] to
    the file it has open (nothing when truncated)."""
    if how == "deleted":
        os.remove(path)
    elif how == "replaced":
        other = path + ".other"
        with open(other, "wb") as f:
            f.write(b"not the trace followed")
        os.rename(other, path)
    else:
        os.truncate(path, 0)
        return
    writer_file.write(rest)
    writer_file.flush()


def test_follow_file_changes():
    """top --follow ends within 2 s of the writer's exit whatever became of
    the file: deleted while written (before: it refreshed the same table
    every second until killed), replaced by another file renamed over it,
    truncated; one note says what happened, and the table is that of what
    the writer wrote to the file it had open.  Default interval (1 s)."""
    src = os.path.join(OUT, "change-src.mpt")
    for how in ("deleted", "replaced", "truncated"):
        sleeper = subprocess.Popen(["sleep", "60"])
        gen("memprof", src, "--steps", "100000", "--pid", str(sleeper.pid), "--compress")
        data = open(src, "rb").read()
        path = os.path.join(OUT, "change-%s.mpt" % how)
        for f in (path, path + ".other"):
            if os.path.exists(f):
                os.remove(f)
        third = len(data) // 3
        writer_file = open(path, "wb")
        writer_file.write(data[:third])
        writer_file.flush()
        p = subprocess.Popen([TOOL, "top", "--follow", "--json", "-n", "0", path],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(1.3)
        change_followed_file(path, how, writer_file, data[third:2 * third])
        time.sleep(1.3)
        running = p.poll() is None
        sleeper.kill()
        sleeper.wait()
        writer_file.close()
        out, err, latency = end_latency(p, time.time())
        notes = [l for l in err.splitlines() if FILE_CHANGE_NOTES[how] in l]
        check("--follow, trace %s while written: still following until the writer exits, then"
              " ends within 2 s of it (%s), exit 0, one note '%s'"
              % (how, latency_text(latency), FILE_CHANGE_NOTES[how]),
              running and latency is not None and latency <= 2 and p.returncode == 0
              and len(err.splitlines()) == 1 and len(notes) == 1, "rc=%s %r" % (p.returncode, err[-300:]))
        if how != "truncated":
            written = os.path.join(OUT, "change-%s-written.mpt" % how)
            open(written, "wb").write(data[:2 * third])
            docs = out.split("--- refresh ")
            last = docs[-1].split("\n", 1)[1] if len(docs) > 1 else docs[-1]
            got = strict_json(last)
            final = tool_json("top", "--json", "-n", "0", written)
            check("--follow, trace %s while written: the last refresh = top on what the writer"
                  " wrote" % how, got is not None and got["rows"] == final["rows"]
                  and got["total"] == final["total"], str(got)[:200])
    # Deleted before its header was complete: nothing to follow any more.
    path = os.path.join(OUT, "change-no-header.mpt")
    open(path, "wb").write(open(src, "rb").read()[:5])
    p = subprocess.Popen([TOOL, "top", "--follow", path], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    time.sleep(1.3)
    os.remove(path)
    out, err, latency = end_latency(p, time.time())
    check("--follow, trace deleted before its header was complete: ends within 2 s (%s), exit 1,"
          " a note says so" % (latency_text(latency)),
          latency is not None and latency <= 2 and p.returncode == 1
          and "was deleted before its header was written" in err, "rc=%s %r" % (p.returncode, err))


def test_runtime_marshal(ocamlopt, work):
    """Unmarshalled blocks that are promoted (tests/marshal.ml): the CTF
    export keeps every allocation, promotion and collection, as counted by
    our reader and by the independent checker."""
    shutil.copy(os.path.join(HERE, "marshal.ml"), work)
    r = run([ocamlopt, "-g", "marshal.ml", "-o", "marshal.exe"], cwd=work)
    check("compile tests/marshal.ml", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    trace = os.path.join(work, "marshal.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=0.01,memprof_seed=3" % trace)
    r = run([os.path.join(work, "marshal.exe"), "100000"], env=env, cwd=work)
    if r.returncode != 0 or not os.path.exists(trace):
        check("traced run of marshal.exe", False, r.stderr[-300:])
        return
    src = tool_json("info", "--json", trace)
    out = os.path.join(work, "marshal.ctf")
    r = tool("ctf", "-o", out, trace)
    rc, cc, text = checker_counts(out)
    ev = src["events"]
    check("marshal trace: promoted unmarshalled samples present",
          src["samples_by_source"]["marshal"] > 0 and ev["promote"] > 0, json.dumps(src)[:300])
    check("marshal trace -> CTF: every alloc/promote/collect kept (mtctf_check counts), no note",
          r.returncode == 0 and rc == 0 and "viewer rules: ok" in text and "note" not in r.stderr
          and (cc.get("allocs"), cc.get("promotions"), cc.get("collections"))
          == (ev["alloc"], ev["promote"], ev["collect"]), r.stderr + text[-300:])
    a = tool_json("top", "--json", "-n", "0", trace)["total"]
    b = tool_json("top", "--json", "-n", "0", out)["total"]
    check("marshal trace -> CTF: same allocated, live and promoted totals", a == b, "%s %s" % (a, b))


def test_runtime_domains(ocamlopt, work):
    """Three domains allocating at once (tests/domains.ml): one stream per
    domain in the trace, volumes per function, --domain, and a CTF export
    that merges the streams and still satisfies memtrace_viewer's rules."""
    shutil.copy(os.path.join(HERE, "domains.ml"), work)
    r = run([ocamlopt, "-g", "domains.ml", "-o", "domains.exe"], cwd=work)
    check("compile tests/domains.ml", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    steps, rate = 300000, 1e-2
    trace = os.path.join(work, "domains.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=%g,memprof_seed=11" % (trace, rate))
    r = run([os.path.join(work, "domains.exe"), str(steps)], env=env, cwd=work)
    check("traced run of domains.exe", r.returncode == 0 and os.path.exists(trace), r.stderr[-300:])
    if r.returncode != 0:
        return
    j = tool_json("info", "--json", trace)
    doms = {d["domain"]: d for d in j["domains"]}
    check("domains trace: three streams with allocations",
          len([d for d in doms.values() if d.get("alloc")]) == 3, json.dumps(j["domains"]))
    t = rows_by_key(tool_json("top", "--json", "-n", "0", trace))
    worker = t.get("Domains.worker_step", {}).get("alloc_bytes")
    main = t.get("Domains.main_step", {}).get("alloc_bytes")
    check("domains trace: worker_step volume within 4.5 sd",
          worker is not None and within(worker, 2 * steps * 9 + 2 * steps // 10 * 3, rate), str(worker))
    check("domains trace: main_step volume within 4.5 sd",
          main is not None and within(main, 7 * steps, rate), str(main))
    main_dom = [d for d, v in doms.items() if v.get("trace_start")]
    others = [str(d) for d in doms if d not in main_dom]
    args = []
    for d in others:
        args += ["--domain", d]
    k = set(rows_by_key(tool_json("top", "--json", "-n", "0", *(args + [trace]))))
    check("domains trace: --domain of the workers shows worker_step, not main_step",
          "Domains.worker_step" in k and "Domains.main_step" not in k, str(k))
    out = os.path.join(work, "domains.ctf")
    r = tool("ctf", "-o", out, trace)
    rc, cc, text = checker_counts(out)
    check("domains trace -> one CTF stream passing mtctf_check with viewer rules",
          r.returncode == 0 and rc == 0 and "viewer rules: ok" in text
          and cc["allocs"] == j["events"]["alloc"], r.stderr + text[-300:])
    test_ctf_v3_export(trace, "runtime-domains")
    test_filtered_exports(trace, "runtime-domains", (
        others and ["--domain", others[0], "--min-lifetime", "10us"] or ["--min-size", "16"],), "3")
    ct = rows_by_key(tool_json("top", "--json", "-n", "0", out))
    check("domains trace: CTF export keeps worker/main volumes",
          ct.get("Domains.worker_step", {}).get("alloc_bytes") == worker
          and ct.get("Domains.main_step", {}).get("alloc_bytes") == main)


def test_robustness(files):
    rnd = random.Random(42)
    cases = []
    srcs = list(files.values())
    if os.path.isdir(UP):
        srcs.append(os.path.join(UP, "memtrace_maketrace_examples_ocamlopt-1e5.v2.ctf"))
    for src in srcs:
        data = open(src, "rb").read()
        for k in range(12):
            cut = rnd.randrange(1, len(data))
            cases.append(("cut %s at %d" % (os.path.basename(src), cut), data[:cut]))
        for k in range(12):
            b = bytearray(data)
            for _ in range(rnd.randrange(1, 8)):
                b[rnd.randrange(len(b))] = rnd.randrange(256)
            cases.append(("corrupt %s #%d" % (os.path.basename(src), k), bytes(b)))
    cases.append(("empty file", b""))
    cases.append(("garbage", bytes(rnd.randrange(256) for _ in range(1000))))
    bad = []
    truncated_ok = 0
    p = os.path.join(OUT, "case.bin")
    junk = os.path.join(OUT, "case.out")
    every = (["info"], ["top"], ["leaks"])
    # The other commands on every third case, to bound the run time.
    more = (["timeline", "--csv"], ["folded"], ["flamegraph", "-o", junk],
            ["pprof", "-o", junk], ["ctf", "-o", junk], ["diff", p])
    for idx, (name, data) in enumerate(cases):
        open(p, "wb").write(data)
        for cmd in every + (more if idx % 3 == 0 else ()):
            r = tool(*(cmd + [p]))
            errs = [l for l in r.stderr.splitlines()
                    if not re.match(r"ocaml-memprof( \w+)?: (warning|note)", l)]
            if r.returncode == 0:
                if "truncated" in r.stderr:
                    truncated_ok += 1
            elif r.returncode != 1 or len(errs) != 1:
                bad.append("%s %s: rc=%d stderr=%r" % (cmd[0], name, r.returncode, r.stderr[:200]))
    check("%d truncated/corrupted inputs x 3-9 commands: exit 0 or 1 with one-line error" % len(cases),
          not bad, "; ".join(bad[:5]))
    check("some cut files are read to their last complete record with a warning",
          truncated_ok > 0, str(truncated_ok))
    # A cut memprof file reads its prefix: fewer events, no error.
    data = open(files["memprof-lz4"], "rb").read()
    open(p, "wb").write(data[: len(data) * 2 // 3])
    r = tool("info", "--json", p)
    ok = r.returncode == 0 and "truncated" in r.stderr
    if ok:
        j = json.loads(r.stdout)
        ok = j["truncated"] and 0 < j["events"]["alloc"]
    check("cut LZ4 memprof trace: prefix read, truncated flagged", ok, r.stderr)
    # A file cut inside its header (magic number, header chunk, LZ4 frame
    # holding the header, CTF trace-info packet) says so, not "bad magic".
    bad = []
    for label in ("memprof", "memprof-lz4", "ctf"):
        data = open(files[label], "rb").read()
        for cut in (2, 6, 12, 40):
            open(p, "wb").write(data[:cut])
            r = tool("info", p)
            if r.returncode != 1 or len(r.stderr.splitlines()) != 1 or \
                    "truncated header" not in r.stderr:
                bad.append("%s cut at %d: %r" % (label, cut, r.stderr))
    check("file cut inside its header: 'truncated header', exit 1", not bad, "; ".join(bad[:3]))
    r = tool("info", os.path.join(OUT, "does-not-exist"))
    check("missing file: exit 1, one line", r.returncode == 1 and len(r.stderr.splitlines()) == 1)
    # Concatenated traces: rejected with a message saying so, all formats.
    bad = []
    for label in ("memprof", "memprof-lz4", "ctf"):
        data = open(files[label], "rb").read()
        open(p, "wb").write(data + data)
        r = tool("top", p)
        if r.returncode != 1 or "concatenated" not in r.stderr or len(r.stderr.splitlines()) != 1:
            bad.append("%s: rc=%d %r" % (label, r.returncode, r.stderr[:200]))
    check("concatenated traces rejected: exit 1, one line saying 'concatenated'", not bad,
          "; ".join(bad))
    # Invalid UTF-8 and control bytes in trace strings never reach the output.
    data = bytearray(open(files["ctf"], "rb").read())
    i = data.find(b"synthetic")
    data[i:i + 4] = b"\xff\x1b[2"
    open(p, "wb").write(bytes(data))
    r = subprocess.run([TOOL, "info", p], capture_output=True)
    check("info escapes invalid UTF-8 and control bytes from the trace",
          r.returncode == 0 and b"\xff" not in r.stdout and b"\x1b" not in r.stdout
          and b"\\xff\\x1b[2hetic" in r.stdout, repr(r.stdout[:300]))


def test_idtab():
    r = run([os.path.join(BUILD, "idtab_test")], timeout=120)
    check("idtab = u64map on 2M mixed operations; hostile ids stay fast",
          r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr)


def test_lifecube():
    r = run([os.path.join(BUILD, "lifecube_test")], timeout=60)
    check("lifecube: " + r.stdout.strip(), r.returncode == 0 and r.stdout.startswith("ok"),
          r.stdout + r.stderr)


def test_many(files):
    """Several traces: a directory of three processes (a parent and two
    children of another executable) plus a file that is not a trace."""
    d = os.path.join(OUT, "many")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    procs = [("parent.mpt", "100", "1", "/usr/bin/build", "1"),
             ("child1.mpt", "101", "100", "/opt/ocamlopt", "2"),
             ("child2.mpt", "102", "100", "/opt/ocamlopt", "3")]
    for f, pid, ppid, exe, seed in procs:
        gen("memprof", os.path.join(d, f), "--steps", "20000", "--pid", pid, "--ppid", ppid,
            "--exe", exe, "--seed", seed)
    open(os.path.join(d, "notes.txt"), "w").write("not a trace\n")
    one = {f: tool_json("top", "--json", "-n", "0", os.path.join(d, f))["total"] for f, *_ in procs}
    r = tool("info", "--json", d)
    j = json.loads(r.stdout) if r.returncode == 0 else {"processes": [], "executables": []}
    tree = {p["pid"]: (p["ppid"], p["depth"], p["executable"]) for p in j["processes"]}
    check("info DIR: process tree from the headers (pid, ppid, depth, executable)",
          tree == {100: (1, 0, "build"), 101: (100, 1, "ocamlopt"), 102: (100, 1, "ocamlopt")}
          and "skipped 1 files that are not traces" in r.stderr, str(tree) + r.stderr)
    ex = {e["executable"]: e for e in j["executables"]}
    check("info DIR: per-executable totals",
          ex.get("ocamlopt", {}).get("processes") == 2
          and ex["ocamlopt"]["samples"] == one["child1.mpt"]["samples"] + one["child2.mpt"]["samples"],
          json.dumps(j["executables"]))
    j = tool_json("info", "--json", "--source", "major", d)
    want = {f: tool_json("top", "--json", "--source", "major", os.path.join(d, f))["total"]["samples"]
            for f, *_ in procs}
    check("info --source major DIR: says so, samples per process = top --source major's",
          j.get("filter") == "--source major"
          and {os.path.basename(p["file"]): p["samples"] for p in j["processes"]} == want,
          json.dumps(j)[:300])
    r = tool("info", "--top", "3", d)
    check("info --top 3 DIR: the process tree, then top sites per executable",
          r.returncode == 0 and r.stdout.startswith("PID") and "== build ==" in r.stdout
          and "== ocamlopt ==" in r.stdout and "Leak.grow" in r.stdout, r.stdout[-500:] + r.stderr)
    t = tool_json("top", "--json", "-n", "0", d)["total"]
    check("top DIR merges every trace: totals are the sums",
          t["samples"] == sum(v["samples"] for v in one.values())
          and abs(t["alloc_bytes"] - sum(v["alloc_bytes"] for v in one.values())) < 2, str(t))
    g = tool_json("top", "--json", "--group", "exe", "-n", "0", d)
    gs = {x["executable"]: x["total"]["samples"] for x in g}
    check("top --group exe: one table per executable",
          gs == {"build": one["parent.mpt"]["samples"],
                 "ocamlopt": one["child1.mpt"]["samples"] + one["child2.mpt"]["samples"]}, str(gs))
    check("top --pid 101 = the child's trace alone",
          tool_json("top", "--json", "-n", "0", "--pid", "101", d)["total"] == one["child1.mpt"])
    t = tool_json("top", "--json", "-n", "0", "--exe", "ocamlopt", os.path.join(d, "*.mpt"))["total"]
    check("top --exe with a quoted glob: the two children",
          t["samples"] == one["child1.mpt"]["samples"] + one["child2.mpt"]["samples"], str(t))
    j = tool_json("diff", "--json", os.path.join(d, "parent.mpt"), "--",
                  os.path.join(d, "child1.mpt"), os.path.join(d, "child2.mpt"))
    check("diff A -- B1 B2: totals of the two groups",
          abs(j["total"]["alloc_b"] - one["child1.mpt"]["alloc_bytes"] - one["child2.mpt"]["alloc_bytes"]) < 2
          and abs(j["total"]["alloc_a"] - one["parent.mpt"]["alloc_bytes"]) < 2, str(j["total"]))
    r = tool("top", "--focus", "NoSuchFunction", d)
    check("empty result: a note says no sample passes the filters",
          r.returncode == 0 and "passes the filters" in r.stderr, r.stderr)
    r = tool("ctf", "-o", os.path.join(OUT, "many.ctf"), d)
    check("ctf with several traces: usage error naming the count",
          r.returncode == 2 and "3 are given" in r.stderr, r.stderr)
    parent = os.path.join(d, "parent.mpt")
    for args, text in (((parent, parent), "parent.mpt is given twice"),
                       ((parent, os.path.join(d, ".", "parent.mpt")), "are the same file")):
        r = tool("top", *args)
        check("top T T (%s): refused, exit 2, one line" % text,
              r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
              and text in r.stderr, "rc=%d %r" % (r.returncode, r.stderr))
    os.symlink("parent.mpt", os.path.join(d, "latest.mpt"))
    t = tool("top", "--json", "-n", "0", d)
    j = json.loads(t.stdout) if t.returncode == 0 else {}
    check("top DIR holding a symlink to one of its traces: that trace read once, with a note",
          j.get("total", {}).get("samples") == sum(v["samples"] for v in one.values())
          and "skipped %s, the same file as %s" % (parent, os.path.join(d, "latest.mpt")) in t.stderr,
          t.stderr + str(j.get("total")))
    os.unlink(os.path.join(d, "latest.mpt"))
    t = tool("top", "--json", "-n", "0", d, parent)
    j = json.loads(t.stdout) if t.returncode == 0 else {}
    check("top DIR DIR/T: T read once, with a note",
          j.get("total", {}).get("samples") == sum(v["samples"] for v in one.values())
          and "met twice among the traces: read once" in t.stderr, t.stderr)
    r = tool("top", d, parent, os.path.join(d, ".", "parent.mpt"))
    check("top DIR DIR/T DIR/./T: T named twice is refused, one line, no note before it",
          r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "are the same file" in r.stderr,
          r.stderr)


COMMANDS = ("info", "top", "folded", "ctf", "pprof", "flamegraph", "timeline", "leaks", "diff")


def test_cli():
    for cmd in COMMANDS:
        r = tool(cmd, "--help")
        check("%s --help" % cmd, r.returncode == 0 and "usage: ocaml-memprof " + cmd in r.stdout)
    r = tool("nosuch")
    check("unknown command: exit 2, no guess when nothing is close",
          r.returncode == 2 and "did you mean" not in r.stderr, r.stderr)
    for typo, meant in (("tpo", "top"), ("retainer", "retainers"), ("flame", "flamegraph")):
        r = tool(typo, "x.trace")
        check("mistyped command %s: exit 2, one line on stderr: did you mean %s?" % (typo, meant),
              r.returncode == 2 and r.stdout == "" and len(r.stderr.splitlines()) == 1
              and "did you mean %s?" % meant in r.stderr, r.stderr)
    for args, meant in ((("top", "--grup", "exe"), "--group"), (("retainers", "--evol"), "--evolution"),
                        (("info", "--jsn"), "--json"), (("top", "--min-sise", "1"), "--min-size"),
                        (("ctf", "--format-verison", "3"), "--format-version")):
        r = tool(*(args + ("x.trace",)))
        check("mistyped option %s %s: exit 2, one line: unknown option, did you mean %s?"
              % (args[0], args[1], meant),
              r.returncode == 2 and len(r.stderr.splitlines()) == 1
              and "unknown option '%s'; did you mean %s?" % (args[1], meant) in r.stderr, r.stderr)
    r = tool("--version")
    check("--version: exit 0, one line with the version",
          r.returncode == 0 and r.stdout.startswith("ocaml-memprof 5.3.0+memprof")
          and len(r.stdout.splitlines()) == 1, r.stdout)


def tool_on_terminal(*args):
    """Run the tool with its stdout on a pseudo-terminal: (status, what it
    wrote there, stderr)."""
    import pty
    import select
    master, slave = pty.openpty()
    p = subprocess.Popen([TOOL] + list(args), stdout=slave, stderr=subprocess.PIPE)
    os.close(slave)
    # Drain both while it runs: a tool writing a page would block on a
    # full terminal.
    out, err, open_fds = b"", b"", [master, p.stderr.fileno()]
    while open_fds:
        for fd in select.select(open_fds, [], [], 30)[0]:
            try:
                chunk = os.read(fd, 65536)
            except OSError:      # EIO: the tool has closed the terminal
                chunk = b""
            if not chunk:
                open_fds.remove(fd)
            elif fd == master:
                out += chunk
            else:
                err += chunk
    os.close(master)
    return p.wait(), out, err.decode(errors="replace")


def test_html_on_terminal(good):
    """report and flamegraph refuse to write their HTML to a terminal (one
    line, exit 2, nothing written there) and still write it to a pipe."""
    for cmd in ("report", "flamegraph"):
        rc, out, err = tool_on_terminal(cmd, good)
        check("%s TRACE with stdout a terminal: exit 2, one line suggesting -o FILE, nothing written" % cmd,
              rc == 2 and out == b"" and len(err.splitlines()) == 1 and "-o FILE" in err,
              "rc=%d, %d bytes on the terminal, %r" % (rc, len(out), err[:200]))
        r = tool(cmd, good)
        check("%s TRACE with stdout a pipe: the HTML page" % cmd,
              r.returncode == 0 and r.stdout.lstrip().lower().startswith("<!doctype html"),
              r.stderr + r.stdout[:80])


def test_cli_table(good):
    """Every subcommand x {unknown option, bad value, missing value, missing
    file, directory without traces, empty file, cut header, wrong format}:
    exit status and one line on stderr naming the option/value or file."""
    junk = os.path.join(OUT, "cli.out")
    base = {c: [] for c in COMMANDS}
    base["pprof"] = ["-o", junk]
    base["ctf"] = ["-o", junk]
    bad_value = {"info": ["--pid", "x1"], "top": ["-n", "x1"], "folded": ["--value", "x1"],
                 "ctf": ["--pid", "x1"], "pprof": ["--live-at", "x1"],
                 "flamegraph": ["--value", "x1"], "timeline": ["--bins", "x1"],
                 "leaks": ["--window", "x1"], "diff": ["--sort", "x1"]}
    missing_value = {"info": "--pid", "top": "--by", "folded": "--value", "ctf": "-o",
                     "pprof": "--live-at", "flamegraph": "--value", "timeline": "--bins",
                     "leaks": "--by", "diff": "--by"}
    d = os.path.join(OUT, "cli-empty-dir")
    os.makedirs(d, exist_ok=True)
    empty = os.path.join(OUT, "cli-empty.trace")
    open(empty, "wb").close()
    cut = os.path.join(OUT, "cli-cut.trace")
    open(cut, "wb").write(open(good, "rb").read()[:20])
    wrong = os.path.join(OUT, "cli-wrong.trace")
    open(wrong, "w").write("this is a text file, not a trace\n")
    missing = os.path.join(OUT, "cli-missing.trace")
    cases = [("unknown option", lambda c: ["--bogus", good], 2, "unknown option '--bogus'"),
             ("bad value", lambda c: bad_value[c] + [good], 2, "bad value 'x1' for "),
             ("missing value", lambda c: [good, missing_value[c]], 2, "needs a value"),
             ("missing file", lambda c: [missing], 1, "No such file or directory"),
             ("directory without traces", lambda c: [d], 1, "no trace files in directory"),
             ("empty file", lambda c: [empty], 1, "empty file"),
             ("file cut in its header", lambda c: [cut], 1, "truncated header"),
             ("wrong format", lambda c: [wrong], 1, "not a trace")]
    for name, args, status, text in cases:
        bad = []
        for c in COMMANDS:
            a = base[c] + args(c)
            if c == "diff" and status == 1:
                a = a + [good]
            if c == "diff" and name == "bad value":
                a = a + [good]
            r = tool(c, *a)
            lines = r.stderr.splitlines()
            want = text + (bad_value[c][0] if name == "bad value" else "")
            if r.returncode != status or len(lines) != 1 or want not in lines[0] \
                    or not lines[0].startswith("ocaml-memprof " + c):
                bad.append("%s: rc=%d %r" % (c, r.returncode, r.stderr[:150]))
        check("CLI table, every command: %s -> exit %d, one line with '%s'" % (name, status, text),
              not bad, "; ".join(bad[:3]))


def retained_of(text, label):
    """Retained size in bytes of root [label] in `retainers` output."""
    units = {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}
    for line in text.splitlines():
        m = re.match(r"\s+([\d.]+) (\w+)\s+[\d.]+%\s+\S+\s+(.*)$", line)
        if m and m.group(3) == label:
            return float(m.group(1)) * units[m.group(2)]
    return None


def test_retainers():
    """Heap snapshots: exact retained sizes of a synthetic graph, truncation,
    the .heapsnapshot export, and errors."""
    gs = os.path.join(BUILD, "gen_snapshot")
    small = os.path.join(OUT, "snap-small.mpt")
    r = run([gs, "small", small])
    check("gen_snapshot small", r.returncode == 0, r.stderr)
    r = tool("retainers", "--site", "leaky", small)
    out = r.stdout
    check("retainers: exit 0", r.returncode == 0, r.stderr)
    check("retainers: 8 blocks, 7 edges, 1 weak, live 264 B",
          "8 blocks, 7 edges (1 weak), live 264 B" in out, out[:200])
    for label, want in (("0x1000", 160), ("finalisers", 72), ("f (a.ml:3)", 16), ("memprof", 0)):
        got = retained_of(out, label)
        check("retainers: root %s retains %d B" % (label, want), got == want, "got %r" % got)
    check("retainers: the shared block is retained by no single root",
          re.search(r"global\s+160 B", out) is not None and re.search(r"stack\s+16 B", out) is not None)
    # Sampled block Y: 5 words at rate 0.01, p = 1 - 0.99^5; estimate 40 B / p.
    p = 1 - 0.99 ** 5
    est = 40 / p
    check("retainers: site estimate 40 B / p = %.0f B" % est,
          re.search(r"\s%d B\s.*leaky \(leak.ml:7\)" % round(est), out) is not None, out)
    check("retainers: retainer path finaliser -> ephemeron -> the site's block",
          "finaliser finalisers\n    -> abstract (3 words)\n    -> block tag 0 (4 words) from leaky (leak.ml:7)" in out, out)
    r = tool("retainers", "--site", "^leak[y]$", small)
    check("retainers --site is a POSIX extended regex on function or file names, like --focus",
          r.returncode == 0 and "sites matching \"^leak[y]$\" (1 blocks" in r.stdout
          and "-> block tag 0 (4 words) from leaky (leak.ml:7)" in r.stdout, r.stdout[-400:] + r.stderr)
    r = tool("retainers", "--site", "(", small)
    check("retainers --site '(': invalid regex refused, exit 2, one line naming --site",
          r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "for --site:" in r.stderr
          and r.stdout == "", "rc=%d %r" % (r.returncode, r.stderr))
    r = tool("retainers", "--site", "leaki", small)
    check("retainers --site matching nothing: exit 0, one hint line naming the closest site",
          r.returncode == 0 and len(r.stderr.splitlines()) == 1 and "closest sites: leaky" in r.stderr
          and "(0 blocks" in r.stdout, r.stderr)
    j = tool_json("retainers", "--json", "--site", "leaky", small)
    check("retainers --json: the tables in bytes (roots 160, 72, 16 B; live 264 B; site leaky %.0f B)" % est,
          [[x["kind"], x["label"], x["retained"]] for x in j["roots"]][:3]
          == [["global", "0x1000", 160], ["finaliser", "finalisers", 72], ["stack", "f (a.ml:3)", 16]]
          and j["snapshot"]["live_bytes"] == 264 and j["snapshot"]["weak_edges"] == 1
          and [(x["site"], x["function"], x["estimate"], x["sampled"]) for x in j["sites"]]
          == [("leaky (leak.ml:7)", "leaky", round(est), 1)], json.dumps(j)[:400])
    steps = ["finaliser finalisers", "abstract (3 words)", "block tag 0 (4 words) from leaky (leak.ml:7)"]
    check("retainers --json: the site's paths and --site's paths, one step per string",
          j["sites"][0]["paths"] == [{"blocks": 1, "bytes": 40, "steps": steps}]
          and j["paths"]["paths"] == j["sites"][0]["paths"] and j["paths"]["blocks"] == 1, json.dumps(j)[-400:])
    bad = report_tests.tree_problems(j["tree"], j["roots"])
    check("retainers --json: dominator tree sound (children + self <= retained, heaviest first), "
          "each kind's roots = the roots table", not bad and len(j["tree"]) > 3, "; ".join(bad[:3]))
    labels = {n["name"]: n["retained"] for n in j["tree"] if n["type"] == "label"}
    check("retainers --json: tree roots 0x1000 160 B, finalisers 72 B, f (a.ml:3) 16 B",
          labels.get("0x1000") == 160 and labels.get("finalisers") == 72 and labels.get("f (a.ml:3)") == 16,
          str(labels))
    r = tool("retainers", "--tree", small)
    check("retainers --tree: the tree printed, root 0x1000 with its 160 B",
          r.returncode == 0 and "Dominator tree" in r.stdout
          and re.search(r"^\s+160 B\s+[\d.]+%\s+1\s+global 0x1000", r.stdout, re.M) is not None, r.stdout[-600:])
    hs = os.path.join(OUT, "snap-small.heapsnapshot")
    r = tool("retainers", "--heapsnapshot", hs, small)
    try:
        j = json.load(open(hs))
        nf = len(j["snapshot"]["meta"]["node_fields"])
        ok = (j["snapshot"]["node_count"] * nf == len(j["nodes"])
              and j["snapshot"]["edge_count"] * 3 == len(j["edges"])
              and sum(j["nodes"][i + 4] for i in range(0, len(j["nodes"]), nf)) == j["snapshot"]["edge_count"]
              and sum(j["nodes"][i + 3] for i in range(0, len(j["nodes"]), nf)) == 264)
    except (OSError, ValueError, KeyError) as e:
        ok = False
    check(".heapsnapshot export: valid JSON, consistent counts, 264 B of nodes", r.returncode == 0 and ok)
    # The option's value is the output: a trace there is refused, never
    # overwritten (a copy, so that the previous binary's overwriting does
    # not spoil the other tests).
    victim = os.path.join(OUT, "snap-small-copy.mpt")
    shutil.copyfile(small, victim)
    before = open(victim, "rb").read()
    for args in ((victim,), (victim, small), ("--diff", victim, small),
                 ("--heapsnapshot=" + victim, small)):
        if args[0] == "--diff":   # AFTER as the output: --heapsnapshot AFTER --diff AFTER TRACE
            args = ("--heapsnapshot", victim) + args
        elif not args[0].startswith("--"):
            args = ("--heapsnapshot",) + args
        r = tool("retainers", *args)
        check("retainers %s: refused (exit 2, one line), the trace intact" % " ".join(
                  a.replace(OUT + os.sep, "") for a in args),
              r.returncode == 2 and len(r.stderr.splitlines()) == 1 and "is a trace" in r.stderr
              and open(victim, "rb").read() == before, "rc=%d %r" % (r.returncode, r.stderr))
        if open(victim, "rb").read() != before:
            shutil.copyfile(small, victim)
    hs2 = os.path.join(OUT, "snap-small-eq.heapsnapshot")
    r = tool("retainers", "--heapsnapshot=" + hs2, small)
    check("retainers --heapsnapshot=OUT writes OUT, the same as --heapsnapshot OUT",
          r.returncode == 0 and open(hs2, "rb").read() == open(hs, "rb").read(), r.stderr)
    chain = os.path.join(OUT, "snap-chain.mpt")
    run([gs, "chain", "300000", chain])
    r = tool("retainers", chain)
    check("retainers: 300000-cell chain retained whole by its global",
          retained_of(r.stdout, "0x2000") == 7.2e6 and "300000 blocks" in r.stdout, r.stdout[:300])
    j = tool_json("retainers", "--json", "--nodes", "20", "--width", "3", chain)
    bad = report_tests.tree_problems(j["tree"], j["roots"])
    top = [n for n in j["tree"] if n["type"] == "label"]
    check("retainers --json --nodes 20 --width 3: at most 20 nodes, sound, the chain's global "
          "retains 7.2 MB, the pruned part marked",
          len(j["tree"]) <= 20 and not bad and top and top[0]["name"] == "0x2000"
          and top[0]["retained"] == 7200000 and any(n.get("more") for n in j["tree"]), "; ".join(bad[:3]) + str(top[:2]))
    r = tool("retainers", "--diff", chain, small)
    check("retainers --diff: the chain's global grew by 7.2 MB",
          re.search(r"0 B\s+7.2 MB\s+\+7.2 MB\s+global 0x2000", r.stdout) is not None, r.stdout[:400])
    r = tool("retainers", "--evolution", small)
    check("retainers --evolution: one line per snapshot, by kind",
          re.search(r"^\s+1\s+0.000\s+8\s+264 B\s+160 B\s+16 B", r.stdout, re.M) is not None, r.stdout)
    queue_paths_scale(gs)
    data = open(chain, "rb").read()
    check("snapshot encoding: %.2f bytes per block of a list" % (len(data) / 300000.0),
          len(data) / 300000.0 <= 4.1)
    cut = os.path.join(OUT, "snap-chain-cut.mpt")
    open(cut, "wb").write(data[: len(data) * 2 // 5])
    r = tool("retainers", cut)
    m = re.search(r"(\d+) blocks", r.stdout)
    check("retainers: a trace cut inside a snapshot gives its prefix (%s blocks), a warning, exit 0"
          % (m.group(1) if m else "?"),
          r.returncode == 0 and m and 0 < int(m.group(1)) < 300000 and "cut short" in r.stderr
          and len(r.stderr.splitlines()) == 1, r.stderr)
    for args, status, text in ((["/nonexistent.trace"], 1, "No such file"),
                               ([os.path.join(OUT, "..", "..", "Makefile")], 1, "not a"),
                               (["--snapshot", "0", small], 2, "--snapshot"),
                               (["--snapshot", "9", small], 1, "no snapshot 9"),
                               (["--bogus", small], 2, "--bogus"),
                               (["--json", "--evolution", small], 2, "--json"),
                               (["--nodes", "0", small], 2, "--nodes"),
                               (["--depth", "x", small], 2, "--depth")):
        r = tool("retainers", *args)
        check("retainers %s: exit %d, one line with '%s'" % (" ".join(args[:2]), status, text),
              r.returncode == status and len(r.stderr.splitlines()) == 1 and text in r.stderr,
              "rc=%d %r" % (r.returncode, r.stderr))
    r = tool("retainers", os.path.join(OUT, "..", "..", "fuzz", "corpus", "memprof-small.mpt"))
    check("retainers on a trace without snapshots: exit 1, says so",
          r.returncode == 1 and "no heap snapshot" in r.stderr, r.stderr)
    test_info_snapshots(gs, small)
    test_swept(gs, small)
    test_holders(gs)
    test_walk_record(gs)
    test_weak_kind(gs)
    test_huge_blocks(gs)
    test_snapshot_deaths(gs)
    d = run([os.path.join(BUILD, "dominators_test")])
    check("dominators: " + d.stdout.strip(), d.returncode == 0, d.stdout)


def test_swept(gs, small):
    """A snapshot with explicit ids (a sweep of the heap, issue 32): the
    tools drop the blocks no root reaches and number the others as the
    walk from the roots does, so every analysis is the same as on the
    walk's snapshot of the same graph; the decoder refuses ids out of
    range."""
    swept = os.path.join(OUT, "snap-small-swept.mpt")
    r = run([gs, "small-swept", swept])
    check("gen_snapshot small-swept", r.returncode == 0, r.stderr)
    for args in ([], ["--json"], ["--site", "leaky"], ["--tree"], ["--evolution"]):
        a, b = tool("retainers", *args, small), tool("retainers", *args, swept)
        norm = lambda t: t.replace(swept, "TRACE").replace(small, "TRACE")
        check("retainers %s: the swept snapshot's output is the walk's (8 blocks of 10 written)"
              % " ".join(args), a.returncode == 0 and b.returncode == 0 and norm(a.stdout) == norm(b.stdout)
              and a.stdout, "\n".join(difflib.unified_diff(norm(a.stdout).splitlines(),
                                                           norm(b.stdout).splitlines(), lineterm=""))[:600])
    hs_a, hs_b = os.path.join(OUT, "walk.heapsnapshot"), os.path.join(OUT, "swept.heapsnapshot")
    tool("retainers", "--heapsnapshot", hs_a, small)
    tool("retainers", "--heapsnapshot", hs_b, swept)
    check("retainers --heapsnapshot: the same export from the swept snapshot",
          os.path.exists(hs_b) and open(hs_a, "rb").read() == open(hs_b, "rb").read())
    j = tool_json("info", "--json", swept)
    s = j["heap_snapshots"][0]
    check("info --json: the swept snapshot's 10 blocks and 8 edges written, swept: true",
          s["blocks"] == 10 and s["edges"] == 8 and s["swept"] is True, json.dumps(s))
    r = tool("info", swept)
    check("info: says the snapshot was swept", "written by a sweep of the heap" in r.stdout, r.stdout)
    # Damaged: ids past the limit (16 -> 3), SKIP records without the IDS
    # one (replaced by a SAMPLE of id 0, which names nothing).
    data = open(swept, "rb").read()
    for what, old, new in (("ids past its limit", bytes([0x8A, 16]), bytes([0x8A, 3])),
                           ("skips and no ids record", bytes([0x8A, 16]), bytes([0x83, 0x00]))):
        i = data.find(old)
        bad = os.path.join(OUT, "swept-bad.mpt")
        open(bad, "wb").write(data[:i] + new + data[i + len(old):] if i >= 0 else b"")
        r = tool("retainers", bad)
        check("retainers on a swept snapshot with %s: exit 1, one line" % what,
              i >= 0 and r.returncode == 1 and len(r.stderr.splitlines()) == 1, "rc=%d %r" % (r.returncode, r.stderr))


def test_walk_record(gs):
    """A snapshot's WALK record (issue 32): where the walk ran, its time
    and a forked child's private memory, in info (text and --json) and in
    retainers' header (gen_snapshot holders: forked, 2.5 ms, 3 MB)."""
    path = os.path.join(OUT, "snap-walk.mpt")
    run([gs, "holders", path])
    text = "walked in a forked child in 2.5 ms (extra memory 3 MB)"
    r = tool("info", path)
    check("info: the walk ran in a forked child, 2.5 ms, 3 MB", r.returncode == 0 and text in r.stdout,
          r.stdout[-300:])
    s = tool_json("info", "--json", path)["heap_snapshots"][0]
    check("info --json: walk fork, walk_ns, walk_extra_bytes",
          (s["walk"], s["walk_ns"], s["walk_extra_bytes"]) == ("fork", 2500000, 3000000), json.dumps(s))
    r = tool("retainers", path)
    check("retainers: the header says where the walk ran", r.returncode == 0 and text in r.stdout.split("\n")[0],
          r.stdout[:300])


def test_holders(gs):
    """Every root holding a site's blocks (issue 33): a list held by a
    global and a stack frame at once, and a second list of the same site
    held by the global alone (gen_snapshot holders: 5 strings of 4 words,
    3 in the shared list)."""
    path = os.path.join(OUT, "snap-holders.mpt")
    run([gs, "holders", path])
    est = 32 / (1 - 0.99 ** 4)          # one string's estimate
    r = tool("retainers", "--bytes", "--site", "leak_site", path)
    out = r.stdout[r.stdout.find("\nHolders"):]
    check("retainers --site: holders listed, the global first: through all 5 strings, "
          "alone the 2 only it reaches, then the stack frame: through 3, alone none",
          r.returncode == 0
          and "through %.0f (100.0%%), alone %.0f (40.0%%), 5 sampled blocks:\n"
              "    global 0x1000\n    -> block tag 0 (2 words) (repeated)\n"
              "    -> string (3 words) from leak_site (h.ml:5)" % (5 * est, 2 * est) in out
          and "through %.0f (60.0%%), alone 0 (0.0%%), 3 sampled blocks:\n"
              "    stack f (a.ml:3)\n" % (3 * est) in out
          and "shared by several roots: %.0f (60.0%%" % (3 * est) in out, out)
    j = tool_json("retainers", "--json", "--site", "leak_site", path)
    want = [["global", "0x1000", 5, round(5 * est), round(2 * est)],
            ["stack", "f (a.ml:3)", 3, round(3 * est), 0]]
    got = lambda hs: [[h["kind"], h["root"], h["blocks"], h["through"], h["alone"]] for h in hs.get("list", [])]
    hs = j["sites"][0].get("holders", {})
    check("retainers --json: the site's holders (kind, root, blocks, through, alone) and "
          "shared = estimate - the alone shares; --site's the same",
          got(hs) == want and hs["shared"] == round(3 * est) and hs["estimate"] == round(5 * est)
          and hs["roots"] == 2 and got(j["paths"].get("holders", {})) == want
          and hs["list"][1]["steps"] == ["stack f (a.ml:3)", "block tag 0 (2 words) (repeated)",
                                         "string (3 words) from leak_site (h.ml:5)"],
          json.dumps(hs)[:600])
    fan = os.path.join(OUT, "snap-fanin.mpt")
    run([gs, "fanin", "100", fan])
    j = tool_json("retainers", "--json", "--site", "shared_site", fan)
    hs = j.get("paths", {}).get("holders", {})
    check("retainers --json: a block held by 100 frames: 100 roots counted, the 64 nearest broken "
          "down (each through all, alone none), all shared",
          hs.get("roots") == 100 and hs.get("examined") == 64 and len(hs.get("list", [])) == 64
          and all(h["through"] == hs["estimate"] and h["alone"] == 0 for h in hs["list"])
          and hs["shared"] == hs["estimate"] > 0, json.dumps(hs)[:300])
    r = tool("retainers", "--site", "shared_site", fan)
    check("retainers --site: a note says 36 more roots reach the blocks, not broken down",
          r.returncode == 0 and "(36 more roots reach these blocks: only the 64 nearest are broken down" in r.stdout,
          r.stdout[-400:])


def test_weak_kind(gs):
    """Blocks reachable only through weak references (issue 33): their own
    kind and sites row, and the kinds add up to the live bytes
    (gen_snapshot weak: live 160 B, the global retains 88 B, the weak
    references 72 B)."""
    path = os.path.join(OUT, "snap-weak.mpt")
    run([gs, "weak", path])
    r = tool("retainers", "--bytes", path)
    kinds = re.findall(r"^  (\w+)\s+(\d+)\s+([\d.]+)%", r.stdout[r.stdout.find("Retained by root kind"):
                                                              r.stdout.find("Top roots")], re.M)
    check("retainers: kinds global 88 B, weak 72 B, shared 0 B, adding up to the live 160 B (100 %)",
          [(k, int(b)) for k, b, _ in kinds] == [("global", 88), ("weak", 72), ("shared", 0)]
          and abs(sum(float(p) for _, _, p in kinds) - 100) < 0.05, r.stdout[:700])
    est3 = 24 / (1 - 0.99 ** 3)
    check("retainers: the weakly reachable sampled block in its own sites row, not in its site's",
          re.search(r"^\s+%d\s+\d+\s+1  \(reachable only through weak references\)$" % round(est3), r.stdout, re.M)
          and re.search(r"^\s+%d\s+\d+\s+1  cache \(w.ml:2\)$" % round(est3), r.stdout, re.M), r.stdout)
    j = tool_json("retainers", "--json", path)
    check("retainers --json: kinds global, weak, shared; their retained bytes add up to live_bytes",
          [k["kind"] for k in j["kinds"]] == ["global", "weak", "shared"]
          and sum(k["retained"] for k in j["kinds"]) == j["snapshot"]["live_bytes"] == 160,
          json.dumps(j["kinds"]))
    r = tool("retainers", "--tree", path)
    check("retainers --tree: the weak kind retains its 72 B",
          re.search(r"^\s+72 B\s+45.0%\s+1\s+weak$", r.stdout, re.M) is not None, r.stdout[-500:])


def test_huge_blocks(gs):
    """Blocks of 2^32 words and more keep their sizes (the graph's are
    32-bit, the larger in a side map): gen_snapshot huge, live 68719476832
    B, the global retaining all but 16 B, a sampled block of 2^32 + 6
    words."""
    path = os.path.join(OUT, "snap-huge.mpt")
    run([gs, "huge", path])
    j = tool_json("retainers", "--json", path)
    check("retainers --json: blocks of 2^32 - 1 and 2^32 + 6 words counted whole",
          j["snapshot"]["live_bytes"] == 68719476832
          and [(k["kind"], k["retained"]) for k in j["kinds"]]
          == [("global", 68719476816), ("stack", 16), ("shared", 0)],
          json.dumps(j["snapshot"]) + json.dumps(j["kinds"]))
    r = tool("retainers", "--bytes", "--site", "big", path)
    check("retainers --site: the sampled block's size in its sites row and its path",
          re.search(r"^\s+34359738424\s+\d+\s+1  big \(h.ml:1\)$", r.stdout, re.M)
          and "abstract (4294967302 words) from big (h.ml:1)" in r.stdout, r.stdout)


def test_snapshot_deaths(gs):
    """One live figure (issue 33): a sampled block that a complete heap
    snapshot does not hold is dead from the snapshot's time, though its
    COLLECT (its sweep) has not come (gen_snapshot dead: 3 samples of 800
    estimated bytes, the snapshot at 20 us holds 2)."""
    path = os.path.join(OUT, "snap-dead.mpt")
    run([gs, "dead", path])
    j = tool_json("top", "--json", path)
    check("top: live at end 1600 B (the snapshot's 2 samples), not 2400 B",
          j["total"]["live_bytes"] == 1600 and j["total"]["alloc_bytes"] == 2400, json.dumps(j["total"]))
    r = tool("timeline", "--csv", "--bins", "4", path)
    lives = [int(l.split(",")[1]) for l in r.stdout.splitlines()[1:]]
    check("timeline: live 1600 B from the snapshot on (every bin after 20 us)",
          r.returncode == 0 and lives and set(lives) == {1600}, r.stdout)
    j = tool_json("top", "--json", "--live-at", "0.000015", path)
    check("top --live-at 15 us (before the snapshot): the 3 samples live, 2400 B",
          j["total"]["live_bytes"] == 2400, json.dumps(j["total"]))
    inc = os.path.join(OUT, "snap-dead-incomplete.mpt")
    run([gs, "dead-incomplete", inc])
    j = tool_json("top", "--json", inc)
    check("top: a snapshot missing blocks (the runtime ran out of memory) proves nothing: 2400 B live",
          j["total"]["live_bytes"] == 2400, json.dumps(j["total"]))
    swept = os.path.join(OUT, "snap-dead-swept.mpt")
    run([gs, "dead-swept", swept])
    j = tool_json("top", "--json", swept)
    check("top: a swept snapshot proves dead the sample it wrote but its roots do not reach: 1600 B live",
          j["total"]["live_bytes"] == 1600 and j["total"]["alloc_bytes"] == 2400, json.dumps(j["total"]))


def test_info_snapshots(gs, small):
    """info lists a trace's heap snapshots; info and retainers say when a
    trace whose snapshots look periodic ends without the next one."""
    r = tool("info", small)
    check("info: the heap snapshot listed (walk, domain, time, blocks, bytes, edges, pause)",
          r.returncode == 0 and "heap snapshots: 1 " in r.stdout
          and "  1: walk 1 by domain 0 at 0.000 s: 8 blocks, 264 B, 7 edges, pause 0.0 ms" in r.stdout,
          r.stdout[-400:])
    late = os.path.join(OUT, "snap-periodic-late.mpt")
    on_time = os.path.join(OUT, "snap-periodic-on-time.mpt")
    run([gs, "periodic", "3", "1000", "10000", late])
    run([gs, "periodic", "3", "1000", "3500", on_time])
    j = tool_json("info", "--json", late)
    want = [{"seq": k, "domain": 0, "time_ns": k * 10**9, "blocks": k, "bytes": 24 * k, "edges": k - 1,
             "outside_heap_bytes": 0, "pause_ns": k * 10**6, "complete": True, "blocks_missing": False,
             "walk": None, "walk_ns": 0, "walk_extra_bytes": 0, "swept": False}
            for k in (1, 2, 3)]
    check("info --json: heap_snapshots of a trace with 3 (walk, domain, time, blocks, bytes, edges, pause)",
          j.get("heap_snapshots") == want, json.dumps(j.get("heap_snapshots")))
    check("info --json: snapshots every 1 s, then none in the last 7 s: heap_snapshot_overdue says so",
          "last 7.00 s" in (j.get("heap_snapshot_overdue") or ""), str(j.get("heap_snapshot_overdue")))
    r = tool("info", late)
    notes = [l for l in r.stdout.splitlines() if "overdue" in l]
    check("info: one line says a periodic snapshot looks overdue, and that it is inferred",
          len(notes) == 1 and "last 7.00 s" in notes[0] and "every 1.00 s" in notes[0]
          and "does not record" in notes[0], r.stdout[-500:])
    r = tool("retainers", late)
    check("retainers: the same one line on stderr, naming the trace",
          r.returncode == 0 and len(r.stderr.splitlines()) == 1 and "overdue" in r.stderr
          and late in r.stderr, r.stderr)
    j = tool_json("info", "--json", on_time)
    r = tool("retainers", on_time)
    t = tool("info", on_time)
    check("a trace ending 0.5 s after its last snapshot of 1 s period: nothing overdue (info, retainers)",
          len(j.get("heap_snapshots", [])) == 3 and j.get("heap_snapshot_overdue", "") is None
          and r.returncode == 0 and r.stderr == "" and "overdue" not in t.stdout,
          r.stderr + str(j.get("heap_snapshot_overdue", "missing")))


def strict_json(text):
    """The JSON value of [text], or None: invalid, or with NaN or Infinity
    (which Python's parser would take)."""
    def reject(name):
        raise ValueError(name)
    try:
        return json.loads(text, parse_constant=reject)
    except ValueError:
        return None


RATE_ZERO_COMMANDS = (["info"], ["info", "--json"], ["info", "--top", "3"], ["top"], ["top", "--json"],
                      ["top", "--csv"], ["leaks"], ["leaks", "--json"], ["timeline"],
                      ["timeline", "--csv"], ["folded", "--value", "objects"], ["diff", "{trace}"],
                      ["diff", "--json", "{trace}"], ["flamegraph", "-o", "{out}.html"],
                      ["report", "-o", "{out}-report.html"], ["pprof", "-o", "{out}.pb.gz"],
                      ["retainers"], ["retainers", "--json"], ["info", "{copy}"])


def rate_zero_checks(trace, label):
    """A trace written at memprof_rate=0 (heap snapshots only): info says
    sampling is off and estimates nothing; no subcommand prints NaN or
    infinity (before: "one sample per inf words", "-nan B allocated", a
    flame graph with self:[-nan]); JSON outputs are strict JSON; ctf
    refuses in one line (CTF's rate must be positive)."""
    r = tool("info", trace)
    check("memprof_rate=0 (%s): info says 'sampling:      off (heap snapshots only)' and"
          " 'allocated:     not estimated (no sampling)'" % label,
          r.returncode == 0 and "sampling:      off (heap snapshots only)\n" in r.stdout
          and "allocated:     not estimated (no sampling)\n" in r.stdout, r.stdout + r.stderr)
    bad = []
    for cmd in RATE_ZERO_COMMANDS:
        out = os.path.join(OUT, "rate0-%s" % label)
        copy = out + "-copy.mpt"        # a second trace (the same file twice is refused)
        shutil.copyfile(trace, copy)
        args = [a.format(out=out, trace=trace, copy=copy) for a in cmd] + [trace]
        r = tool(*args)
        texts = [r.stdout, r.stderr]
        for a in args:
            if a.startswith(out) and a.endswith(".html") and os.path.exists(a):
                texts.append(open(a, encoding="utf-8").read())
        nan = [m for t in texts for m in re.findall(r"[-+]?\b(?:nan|NaN|inf|Infinity)\b", t)]
        if r.returncode != 0 or nan:
            bad.append("%s: rc=%d %s %r" % (" ".join(cmd), r.returncode, nan[:3], r.stderr[-150:]))
        if "--json" in cmd and strict_json(r.stdout) is None:
            bad.append("%s: not strict JSON" % " ".join(cmd))
        if cmd[0] == "report" and r.returncode == 0:
            m = re.search(r'<script id="data" type="application/json">(.*?)</script>', texts[-1], re.S)
            if not m or strict_json(m.group(1)) is None:
                bad.append("report: its data is not strict JSON")
    check("memprof_rate=0 (%s): %d subcommands exit 0 without NaN or infinity, JSON strict"
          % (label, len(RATE_ZERO_COMMANDS)), not bad, "; ".join(bad)[:800])
    r = tool("ctf", "-o", os.path.join(OUT, "rate0-%s.ctf" % label), trace)
    check("memprof_rate=0 (%s): ctf exits 1 with one line (no samples to export)" % label,
          r.returncode == 1 and len(r.stderr.splitlines()) == 1 and "memprof_rate=0" in r.stderr,
          r.stderr)


def test_rate_zero():
    trace = os.path.join(OUT, "snap-rate0.mpt")
    r = run([os.path.join(BUILD, "gen_snapshot"), "small", trace, "--rate", "0"])
    check("gen_snapshot small --rate 0", r.returncode == 0, r.stderr)
    if r.returncode == 0:
        rate_zero_checks(trace, "synthetic")


def cpu_seconds(args):
    """CPU seconds (user + system) of ocaml-memprof [args], the least of 3
    runs (robust to a loaded machine, unlike elapsed times), to the
    microsecond (getrusage: os.times counts 10 ms ticks, as long as a
    250k-cell list's retainer paths take)."""
    def children():
        u = resource.getrusage(resource.RUSAGE_CHILDREN)
        return u.ru_utime + u.ru_stime
    best = None
    for _ in range(3):
        before = children()
        r = tool(*args)
        t = children() - before
        if r.returncode != 0:
            return None
        best = t if best is None else min(best, t)
    return best


def queue_paths_scale(gs):
    """Issue 32: a global's list with every 32nd cell sampled (a long
    Queue under memprof), each sampled cell's retainer path as long as the
    list before it.  Walking each path to the root was quadratic (200k
    cells: 11.7 s); the paths are read from one breadth-first tree, so
    doubling the list about doubles the time: the ratio is bounded, not
    the times (the machine's speed varies)."""
    traces = {}
    for n in (250000, 500000):
        traces[n] = os.path.join(OUT, "snap-queue-%d.mpt" % n)
        run([gs, "chain", str(n), traces[n], "--sample-every", "32"])
    j = tool_json("retainers", "--json", traces[250000])
    site = j["sites"][0] if j["sites"] else {}
    first = site.get("paths", [{}])[0]
    check("retainers --json: a sampled list's first path is the global, a run of cells, the "
          "sampled cell (%s)" % first.get("steps"),
          site.get("sampled") == 250000 // 32 and first.get("blocks") == 1
          and first.get("steps") == ["global 0x2000", "block tag 0 (2 words) (repeated 10+ times)",
                                     "block tag 0 (2 words) from push (queue.ml:1)"])
    j0 = tool_json("retainers", "--json", "--paths", "0", traces[250000])
    check("retainers --json --paths 0: no path",
          j0["sites"] and all(s["paths"] == [] for s in j0["sites"]))
    times = {n: cpu_seconds(["retainers", "--json", traces[n]]) for n in traces}
    ratio = times[500000] / max(times[250000], 0.01) if None not in times.values() else None
    check("retainers --json on a sampled list: 500k cells %.2f s, 250k %.2f s, ratio %s <= 3 "
          "(linear; quadratic is 4)" % (times[500000] or -1, times[250000] or -1,
                                        ratio and "%.2f" % ratio),
          ratio is not None and ratio <= 3)
    rt = {}
    for n in traces:
        html = os.path.join(OUT, "snap-queue-%d.html" % n)
        rt[n] = cpu_seconds(["report", traces[n], "-o", html])
    ratio = rt[500000] / max(rt[250000], 0.01) if None not in rt.values() else None
    check("report on a sampled list: 500k cells %.2f s, 250k %.2f s, ratio %s <= 3"
          % (rt[500000] or -1, rt[250000] or -1, ratio and "%.2f" % ratio),
          ratio is not None and ratio <= 3)


def timed_tool(args, timeout=10):
    """(exit status or None when killed at [timeout], stdout, stderr,
    seconds) of ocaml-memprof [args]."""
    t0 = time.time()
    try:
        r = subprocess.run([TOOL] + args, capture_output=True, text=True, timeout=timeout)
        return r.returncode, r.stdout, r.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "", "", time.time() - t0


def elf_with_huge_symtab(path, size):
    """A sparse file of [size] bytes, an ELF64 header whose section table
    holds a symbol table of 300 MB and its string table, both inside the
    file (beyond the symbols' size cap of the tools)."""
    shoff, symoff, symsize = 64, 4096, 300 << 20
    stroff = symoff + symsize
    eh = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 0)
    sh = bytes(64)
    sh += struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, symoff, symsize, 2, 0, 8, 24)   # SHT_SYMTAB
    sh += struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, stroff, 1 << 20, 0, 0, 1, 0)   # SHT_STRTAB
    with open(path, "wb") as f:
        f.write(eh + sh)
    os.truncate(path, size)


def elf_with_symbols(path, symbols):
    """A minimal ELF64 file whose symbol table holds [symbols], (name,
    value) pairs: the part of an executable the tools read to name module
    roots."""
    strtab = b"\0"
    syms = bytes(24)
    for name, value in symbols:
        syms += struct.pack("<IBBHQQ", len(strtab), 0x11, 0, 1, value, 8)   # global data object
        strtab += name.encode() + b"\0"
    shoff = 64
    symoff = shoff + 3 * 64
    stroff = symoff + len(syms)
    eh = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    eh += struct.pack("<HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, 3, 0)
    sh = bytes(64)
    sh += struct.pack("<IIQQQQIIQQ", 0, 2, 0, 0, symoff, len(syms), 2, 1, 8, 24)   # SHT_SYMTAB
    sh += struct.pack("<IIQQQQIIQQ", 0, 3, 0, 0, stroff, len(strtab), 0, 0, 1, 0)   # SHT_STRTAB
    with open(path, "wb") as f:
        f.write(eh + sh + syms + strtab)


# Symbol at the global root's address -> its label in retainers.
MODULE_SYMBOLS = (("camlFoo", "Foo"), ("camlFoo__Bar", "Foo.Bar"),
                  ("camlDune__exe__Main", "Main"), ("camlDune__exe__Foo__Bar", "Foo.Bar"),
                  ("camlFoo__bar_12", None), ("camlFoo__Bar.f_421", None),
                  ("camlDune__exe__Main__f_123", None), ("camlDune__exe__Main.code_begin", None),
                  ("camlDune__exe__Main__gc_roots", None), ("camlDune__exe", None),
                  ("camlDune__exe__", None), ("camlDune__exe__main", None))


def test_module_symbols():
    """Module roots named from the executable's symbol table: module blocks
    (camlFoo, camlFoo__Bar) are named, dune's executables' modules
    (camlDune__exe__Main) by the user's module name, and no function or
    other symbol (camlFoo__bar_12, camlDune__exe__Main.code_begin) is
    taken for a module.  Before, camlDune__exe__Main was shown as its
    address."""
    d = os.path.join(OUT, "modsyms")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    bad = []
    for sym, want in MODULE_SYMBOLS:
        exe = os.path.join(d, sym + ".elf")
        elf_with_symbols(exe, [("caml_globals", 0x2000), (sym, 0x1000)])
        trace = os.path.join(d, sym + ".mpt")
        run([os.path.join(BUILD, "gen_snapshot"), "small", trace, "--exe", exe, "--anchor", "0x2000"])
        r = tool("retainers", "--json", trace)
        roots = strict_json(r.stdout)
        got = [x["label"] for x in roots["roots"] if x["kind"] == "global"] if roots else None
        if r.returncode != 0 or r.stderr or got != [want or "0x1000"]:
            bad.append("%s: %s (want %s) %r" % (sym, got, want or "0x1000", r.stderr[-100:]))
    check("module roots from the symbol table: %d symbols named or left as addresses as they"
          " should (dune's camlDune__exe__Main as Main)" % len(MODULE_SYMBOLS), not bad, "; ".join(bad))


HOSTILE_COMMANDS = (["info"], ["top"], ["leaks"], ["timeline"], ["flamegraph", "-o", "{out}.html"],
                    ["folded"], ["pprof", "-o", "{out}.pb.gz"], ["ctf", "-o", "{out}.ctf"],
                    ["diff", "{trace}"], ["report", "-o", "{out}-report.html"], ["retainers"],
                    ["retainers", "--json"], ["retainers", "--heapsnapshot", "{out}.heapsnapshot"])


def test_hostile_executable():
    """The executable a trace names is untrusted: a header naming a FIFO,
    /dev/zero, a 10 GB sparse file, a directory, a missing file or an ELF
    file whose symbol table is beyond the size read: every subcommand ends
    within 2 s; those that name module roots from the executable (retainers,
    report, and flamegraph, which writes the report) warn in one line and keep the roots' addresses.  (Before: a
    FIFO blocked, /dev/zero and the sparse file were read whole.)"""
    d = os.path.join(OUT, "hostile")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    fifo, big, sub, elf = (os.path.join(d, n) for n in ("fifo", "sparse-10G", "dir", "huge-symtab.elf"))
    os.mkfifo(fifo)
    with open(big, "wb") as f:
        f.truncate(10 << 30)
    os.makedirs(sub)
    elf_with_huge_symtab(elf, 10 << 30)
    cases = (("a FIFO", fifo, "not a regular file"), ("/dev/zero", "/dev/zero", "not a regular file"),
             ("a 10 GB sparse file", big, "not a little-endian ELF64 file"),
             ("a directory", sub, "not a regular file"),
             ("a missing file", os.path.join(d, "missing"), "No such file"),
             ("an ELF file with a 300 MB symbol table", elf, "symbol table larger than 256 MB"))
    gs = os.path.join(BUILD, "gen_snapshot")
    for label, exe, reason in cases:
        trace = os.path.join(d, "snap-%s.mpt" % re.sub(r"\W+", "-", label))
        r = run([gs, "small", trace, "--exe", exe, "--anchor", "0x1000"])
        if r.returncode != 0:
            check("gen_snapshot --exe " + label, False, r.stderr)
            continue
        slow, bad = [], []
        for cmd in HOSTILE_COMMANDS:
            args = [a.format(out=trace, trace=trace) for a in cmd] + [trace]
            rc, out, err, secs = timed_tool(args)
            uses_exe = cmd[0] in ("retainers", "report", "flamegraph")  # flamegraph writes the report
            warned = [l for l in err.splitlines() if "module roots shown as addresses" in l]
            if rc is None or secs > 2:
                slow.append("%s %s" % (" ".join(cmd[:2]), "killed after 10 s" if rc is None else "%.2f s" % secs))
            elif rc != 0 or (uses_exe and (len(err.splitlines()) != 1 or len(warned) != 1
                                           or reason not in warned[0]))\
                    or (not uses_exe and warned):
                bad.append("%s: rc=%s %r" % (" ".join(cmd[:2]), rc, err[-200:]))
        check("header naming %s as the executable: all %d subcommands end within 2 s"
              % (label, len(HOSTILE_COMMANDS)), not slow, "; ".join(slow))
        check("header naming %s: exit 0; retainers, report and flamegraph (the report) warn in one line ('%s'), the"
              " others say nothing of it" % (label, reason), not bad, "; ".join(bad)[:600])
        rc, out, err, secs = timed_tool(["retainers", "--json", trace])
        try:
            roots = json.loads(out)["roots"] if rc == 0 else None
        except ValueError:
            roots = None
        check("header naming %s: the global root keeps its address label" % label,
              roots is not None and [x["label"] for x in roots if x["kind"] == "global"] == ["0x1000"],
              "rc=%s %s" % (rc, roots))
    for f in (big, elf):            # 10 GB each, if only apparently
        os.remove(f)


def peak_rss_kb(args):
    """Run [args] (output discarded) under /usr/bin/time: its exit status
    and peak RSS in KB.  (A child's own rusage would start from the Python
    process's RSS, which a fork passes on.)"""
    out = os.path.join(OUT, "rss.txt")
    r = run(["/usr/bin/time", "-f", "%M", "-o", out] + args)
    with open(out) as f:
        return r.returncode, int(f.read().split()[-1])


def test_live_memory():
    """What a live sample costs top, leaks and report (livetab.h,
    lifecube.h): on a trace of 300 k live samples over 4 domains (gen_trace
    --many-live), where a quarter of the blocks reach the live table below
    its window, peak RSS minus that on a tiny trace, per live sample, is at
    most 44 bytes for top and leaks (37.5 and 35.9 measured; one sorted
    array and a stray map took 49.7 and 50.2) and 52 for report (47
    measured; 119 when its cells were 48 bytes and the live table stayed
    whole until the end).  The report holds a cell per live sample or
    nearly on this trace (295 k cells of 32 bytes, with their index), built
    while the live table drains; on make -C tools bench-memory's trace of
    3.67 M live samples (1.74 M cells) it takes 33.9.  Not under
    sanitizers, whose shadow memory is counted too."""
    if os.environ.get("TOOLS_BUILD") or not os.access("/usr/bin/time", os.X_OK):
        print("skip live-sample memory bound (sanitizer build or no /usr/bin/time)")
        return
    big, tiny = os.path.join(OUT, "many-live.mpt"), os.path.join(OUT, "tiny.mpt")
    truth = gen("memprof", big, "--many-live", "4", "--rate", "0.1", "--steps", "125000")
    gen("memprof", tiny, "--steps", "1000")
    live = tool_json("info", "--json", big)["live_at_end_blocks"]
    check("many-live trace: every leaked block live at the end (%d >= %d)"
          % (live, truth["live_blocks"]), live >= truth["live_blocks"] > 250000)
    html = os.path.join(OUT, "many-live.html")
    for cmd, bound in (("top", 44), ("leaks", 44), ("report", 52)):
        out = ["-o", html] if cmd == "report" else []
        rc_big, kb_big = peak_rss_kb([TOOL, cmd] + out + [big])
        rc_tiny, kb_tiny = peak_rss_kb([TOOL, cmd] + out + [tiny])
        per = (kb_big - kb_tiny) * 1024.0 / max(live, 1)
        check("%s holds %.1f bytes per live sample (bound %d)" % (cmd, per, bound),
              rc_big == 0 and rc_tiny == 0 and per <= bound, "exit %d, %d" % (rc_big, rc_tiny))


def main():
    os.makedirs(OUT, exist_ok=True)
    for exe in (TOOL, GEN):
        if not os.access(exe, os.X_OK):
            print("missing %s (run make first)" % exe)
            print("0 passed, 1 failed")
            return 1
    test_cli()
    test_idtab()
    test_lifecube()
    test_retainers()
    test_hostile_executable()
    test_module_symbols()
    test_rate_zero()
    test_upstream()
    for name in ("memtrace_v0.2.3_test_ocamlopt.v2.ctf",):
        if os.path.isdir(UP):
            test_pprof(os.path.join(UP, name), "upstream-v2")
    files = test_synthetic()
    test_multidomain()
    test_empty_stacks()
    test_runtime_trace()
    test_robustness(files)
    test_cli_table(files["memprof"])
    test_presets_synthetic(files["memprof"])
    test_html_on_terminal(files["memprof"])
    test_many(files)
    test_follow_incremental()
    test_follow_file_changes()
    test_live_memory()
    report_tests.test_report(check, tool, tool_json, run, OUT, HERE, gen)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""check.py PROGRAMS_DIR SOURCE_DIR WORK_DIR OCAML_MEMPROF [TOOLS_TESTS_DIR]

The real-Lwt leak programs (leak_*.exe, built by build-lwt.sh), each run
as `leak` and as `control` on loopback, traced at rate 1e-2 with a fixed
seed, a heap snapshot every 3 major cycles and one at exit, and analysed
with ocaml-memprof as it is.  Asserts, per program:
  leak:    `leaks --preset lwt --by location` ranks the planted line (the
           source line marked "(* planted *)") first, its live bytes at the
           end within 5 % of the bytes the program counts with
           Obj.reachable_words; `retainers --preset lwt` names the main
           module's global as the first root, its retained size within 5 %
           of Obj.reachable_words of the leaking structure, and a path from
           it to the planted site's blocks; the report's allocation-race
           flag flags no site (a leak is not a backlog; needs chromium);
           leak_pending: `lwt` estimates the pending promises of each
           creation site (lines marked "pending:") within 3.3 standard
           deviations of the samples the true count the program prints
           gives (whether within the tools' 2 standard errors, a figure),
           at the end and, in its
           over-time series, at each of the snapshots the program takes
           every 500 requests (found in the trace by their stack root at
           the snapshot's call; in sd of the samples expected from the
           truth: none beyond 3.3); the
           report's Lwt view gives the same figures as `lwt --json` (needs
           chromium);
  control: no site of the program's own files scoring 1 % of the leak
           (80 kB) or more in `leaks` (GC lag gives churn scores of a few
           samples' worth, listed as figures), the main
           module retaining less than 1 % of what the leak's does, and no
           pending promise at leak_pending's creation sites in the
           program's own snapshots (a periodic one may catch the one
           request in flight: at most two samples per site).
Traced with callback frames (memprof_callbacks=16): the share of all
allocation that `top --preset lwt` charges to the program entry (the
module initialiser calling Lwt_main.run) at most 5 % (issue 30's
target); the share of Lwt_main.run (which the preset keeps: what Lwt's
loop allocates for no callback of the program), with and without the
callback frames (the same trace with `--hide '<callback>'`, their
marker): at least LOOP_SHARE_MOVED points lower with them.  leak_table leak, with the .cmt files
build-lwt.sh has dune's @check write (issue 31, found from the
executable's path): `retainers --by type` gives a path from global
Leak_table to the planted line's blocks whose every step is named by
field and type (Leak_table.in_flight : (int, Leak_table.request)
Hashtbl.t, .data, .(_), Cons.data : Leak_table.request, .body : Bytes.t),
counts exactly the requests kept as Leak_table.request blocks, and the
table's type retains Obj.reachable_words of it within 5 %.  Figures (not
asserted): the steps of retainer paths that carry an allocation site, and
the share that carry a type or field name.  Last line: "N passed, N failed"."""
import json
import os
import re
import subprocess
import sys

progs, src, work, mp = sys.argv[1:5]
os.makedirs(work, exist_ok=True)
tests_dir = sys.argv[5] if len(sys.argv) > 5 else None
RATE, SEED = "1e-2", 1
# Callback frames (memprof_callbacks): what Lwt allocates for a callback is
# charged to it.  What Lwt allocates for no callback of the program goes
# to Lwt_main.run, which the lwt preset keeps (with the library code Lwt
# calls, absorbed): 45.8 to 52.2 % of all allocation over 16 traces with
# callback frames, 51.7 to 57.3 % without them (--hide '<callback>'); the
# callback frames move 5.1 to 6.2 points to the program's callbacks; the
# check asks LOOP_SHARE_MOVED.  The entry keeps 0.0 %.
CALLBACK_FRAMES = 16
LOOP_SHARE_MOVED = 3.0
passed = failed = 0


def check(name, ok, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   " + name)
    else:
        failed += 1
        print("FAIL " + name + (": " + detail if detail else ""))


def figure(text):
    print("     " + text)


def tool(*args):
    r = subprocess.run([mp] + list(args), capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ocaml-memprof %s: %s" % (" ".join(args), r.stderr.strip()[-300:]))
    return r.stdout


def tool_json(*args):
    return json.loads(tool(*args))


def within(a, b, pct):
    return b > 0 and abs(a - b) <= pct / 100.0 * b


def marked_lines(name, mark):
    """Line numbers of the source lines of program [name] carrying [mark]."""
    with open(os.path.join(src, name + ".ml")) as f:
        return [i + 1 for i, line in enumerate(f) if mark in line]


def run(name, mode):
    trace = os.path.join(work, "%s-%s.trace" % (name, mode))
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=%s,memprof_seed=%d,"
               "memprof_snapshot_at_exit=1,memprof_snapshot_every_cycles=3,"
               "memprof_callbacks=%d" % (trace, RATE, SEED, CALLBACK_FRAMES))
    r = subprocess.run([os.path.join(progs, name + ".exe"), mode], env=env, capture_output=True,
                       text=True, timeout=120)
    check("%s %s: runs on loopback and stops by itself" % (name, mode), r.returncode == 0,
          r.stderr.strip()[-300:])
    facts = {}
    for line in r.stdout.splitlines():
        w = line.split()
        if w[0] == "holder":
            facts["holder"], facts["holder_bytes"] = w[1], int(w[3])
        elif w[0] == "snapshot":
            facts.setdefault("snapshots", []).append({w[1]: int(w[2]), w[3]: int(w[4])})
        elif w[0] == "pending":
            facts.setdefault("pending", {})[w[1]] = int(w[2])
        else:
            facts[w[0]] = int(w[1])
    return trace, facts, r.returncode == 0


def module_name(name):
    return name[0].upper() + name[1:]


def entry_shares(trace, name, *hide):
    """The shares of all allocation (%) that top --preset lwt charges to
    the program entry (the module initialiser calling Lwt_main.run) and to
    Lwt_main.run and its local functions (run_loop; the preset keeps them:
    what Lwt's loop allocates on its own, for no callback of the
    program)."""
    top = tool_json("top", "--preset", "lwt", *hide, "--json", "-n", "0", trace)
    share = lambda keep: 100.0 * sum(r["alloc_bytes"] for r in top["rows"] if keep(r["key"])) / \
        top["total"]["alloc_bytes"]
    return (share(lambda k: k == "Dune__exe__" + module_name(name)),
            share(lambda k: k == "Lwt_main.run" or k.startswith("Lwt_main.run.")))


def check_entry_share(name, mode, trace):
    """The entry's share: at most 5 % (issue 30).  Lwt_main.run's, with the
    callback frames and without them (their marker entry hidden): at least
    LOOP_SHARE_MOVED points of all allocation lower with them (moved to
    the program's callbacks)."""
    entry, loop = entry_shares(trace, name)
    entry_without, loop_without = entry_shares(trace, name, "--hide", "<callback>")
    figure("%s %s: top --preset lwt charges %.1f %% of all allocation to the program entry, %.1f %% to "
           "Lwt_main.run (without the callback frames %.1f %% and %.1f %%)"
           % (name, mode, entry, loop, entry_without, loop_without))
    check("%s %s: the program entry keeps at most 5 %% of all allocation (%.1f %%)" % (name, mode, entry),
          entry <= 5)
    check("%s %s: callback frames move at least %.0f %% of all allocation from Lwt_main.run to the program's "
          "callbacks (%.1f %% -> %.1f %%)" % (name, mode, LOOP_SHARE_MOVED, loop_without, loop),
          loop <= loop_without - LOOP_SHARE_MOVED)


def race_flags(trace):
    """Sites the report's Lifetimes view flags as allocation races, or None
    without chromium."""
    import shutil
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome or not tests_dir:
        return None
    sys.path.insert(0, tests_dir)
    import cdp
    html = trace + ".html"
    tool("report", "-o", html, trace)
    with cdp.Browser(chrome) as b:
        page = b.page(1200, 800)
        page.goto("file://" + os.path.abspath(html), "document.body && document.body.getAttribute('data-ready')",
                  timeout=120)
        out = page.eval("JSON.stringify(Array.from(R.flags.entries()).map(function (e) "
                        "{ return [NAMES[e[0]], e[1]]; }))")
    return sorted(k for k, f in json.loads(out) if f["kind"] == "race")


def lwt_view(trace):
    """The report's Lwt view (lwtData()) and its console errors, or None
    without chromium (the report is the one race_flags wrote)."""
    import shutil
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome or not tests_dir:
        return None
    sys.path.insert(0, tests_dir)
    import cdp
    import lwt_tests
    with cdp.Browser(chrome) as b:
        data, errors, _, _ = lwt_tests.page_lwt(b, trace + ".html")
    return data, errors


def matched_snapshots(name, trace, lwt, taken):
    """The indices of the trace's snapshots that the program took itself,
    [taken] of them in order: those with a stack root at its line marked
    "(* snapshot *)" (the wall clock cannot tell: the trace's times and
    the program's clock readings were found up to 10 ms apart); a
    periodic snapshot at the end of the major cycle the call finished
    comes just before with the same heap, and is left out.  One index per
    snapshot taken, or None for all when they do not match."""
    where = "%s.ml:%d)" % (name, marked_lines(name, "(* snapshot *)")[0])
    ours = [i for i in range(len(lwt["snapshots"]))
            if any(r["kind"] == "stack" and r["label"].endswith(where) for r in tool_json(
                "retainers", "--json", "-n", "100000", "--paths", "0", "--snapshot", str(i + 1), trace)["roots"])]
    # consecutive ones with the same pending promises are one call's
    groups = []
    for i in ours:
        same = groups and groups[-1][-1] == i - 1 and \
            lwt["snapshots"][i]["pending"] == lwt["snapshots"][i - 1]["pending"]
        if same:
            groups[-1].append(i)
        else:
            groups.append([i])
    return [g[-1] for g in groups] if len(groups) == len(taken) else [None for _ in taken]


def series_checks(name, what, series, expected, taken, matched, lines):
    """Each site's series against the truth t at each matched snapshot,
    in standard deviations of the samples: z = (samples - m) / sqrt(m),
    m = [expected] x t the mean samples of t promises (Poisson); none
    beyond 3.3 (0.1 % each).  The points are not independent draws (a
    promise pending at one snapshot of the leak is pending at the next,
    with the same sampled blocks), so the count beyond 2 is a figure, not
    a binomial band: one low draw early leaves every later point low.
    (The run is not deterministic, sockets ordering its allocations, so
    that a fixed seed does not fix the samples; the standard error that
    the tools print is computed from the samples themselves, which a low
    draw shrinks: a point 2.8 sd low was 3.7 of its own se.)"""
    bad, shown, wide, points = [], [], 0, 0
    for k, (truth, i) in enumerate(zip(taken, matched)):
        if i is None:
            bad.append("the program's snapshot %d not found in the trace" % (k + 1))
            continue
        for kind, t in sorted(truth.items()):
            s = next((s for s in series if "%s.ml:%d)" % (name, lines[kind]) in s["site"]), None)
            x, m = (s["samples"][i] if s else 0), expected * t
            z = (x - m) / m ** 0.5 if m else (0 if x == 0 else float("inf"))
            points += 1
            shown.append("%s %d/%.0f samples (z %+.1f)" % (kind, x, m, z))
            wide += abs(z) > 2
            if not abs(z) <= 3.3:
                bad.append("%s at snapshot %d: %d samples, %.0f expected for the true %d" % (kind, i + 1, x, m, t))
    check("%s leak: %s: each site's pending at the program's %d snapshots within 3.3 sd (%d of %d points "
          "beyond 2)" % (name, what, len(taken), wide, points),
          taken and not bad and points >= 2 * len(taken), "; ".join(bad[:4]))
    return shown


own_file = re.compile(r"\((programs/)?(leak_[a-z]+|loopback)\.ml:")
names = sorted(f[:-4] for f in os.listdir(progs) if re.match(r"leak_[a-z]+\.exe$", f))
check("the four leak programs are built", names == ["leak_pending", "leak_stream", "leak_switch", "leak_table"],
      str(names))


# What a block step shows when its type is unknown: its tag's name.
TAG_NAMES = re.compile(r"(block tag \d+|lazy|closure|object|infix|forward|abstract|string|float|"
                       r"float array|custom|continuation) \(\d+ words?\)")


def typed_step(step):
    """A block step of a retainer path named by a field or an OCaml type
    ("Cons.data : Leak_table.request (3 words)"), not by its tag alone
    ("block tag 0 (3 words)"; a type printed as a tag's name, such as
    string, counts as untyped)."""
    return " : " in step or not TAG_NAMES.match(step)


def check_typed_paths(name, mod, planted, trace, facts):
    """Issue 31 on a dune project: the types of the .cmt files that dune's
    @check wrote (the program's unit is Dune__exe__Leak_table, its global
    named Leak_table), found from the executable's path alone."""
    ret = tool_json("retainers", "--preset", "lwt", "--by", "type", "--json", "-n", "8", "--paths", "5",
                    "--site", "Dune__exe__%s\\.handle" % mod, trace)
    site = next((s for s in ret["sites"] if any("%s.ml:%d)" % (name, line) in s["site"] for line in planted)), None)
    paths = site["paths"] if site else []
    # The leak: in_flight : (int, request) Hashtbl.t -> .data (the bucket
    # array) -> .(_) a bucket -> (Cons.next ...) -> Cons.data : request ->
    # .body : Bytes.t, the planted line's block.
    want = [mod + ".in_flight : (int, %s.request) Hashtbl.t" % mod,
            ".data : (int, %s.request) Stdlib.Hashtbl.bucketlist array" % mod,
            ".(_) : (int, %s.request) Stdlib.Hashtbl.bucketlist" % mod,
            "Cons.data : %s.request" % mod, ".body : Bytes.t"]

    def typed_leak_path(p):
        st = p["steps"]
        heads = [x for x in st[1:] if not x.startswith("Cons.next : ")]
        return (st[0] == "global " + mod and len(heads) == len(want)
                and all(h.startswith(w + " (") for h, w in zip(heads, want))
                and any("%s.ml:%d)" % (name, line) in st[-1] for line in planted))
    good = [p for p in paths if typed_leak_path(p)]
    check("%s leak: retainers --by type: a path from global %s to the planted site's blocks named by "
          "field and type (%s)" % (name, mod, " -> ".join(w.split(" : ")[0] for w in want)),
          good != [], json.dumps(paths[:1])[:400])
    steps = [x for p in paths for x in p["steps"][1:]]
    typed = [x for x in steps if typed_step(x)]
    check("%s leak: retainers --by type: every step of the planted site's %d paths is typed (%d of %d)"
          % (name, len(paths), len(typed), len(steps)), steps != [] and len(typed) == len(steps),
          str([x for x in steps if not typed_step(x)][:3]))
    weighted = sum(p["blocks"] * (len(p["steps"]) - 1) for p in paths)
    weighted_typed = sum(p["blocks"] * sum(typed_step(x) for x in p["steps"][1:]) for p in paths)
    figure("%s leak: %d of %d steps (%.1f %%) of the planted site's %d retainer paths carry a type or field "
           "name; weighted by sampled blocks %.1f %%; %d of %d paths are the typed leak path"
           % (name, len(typed), len(steps), 100.0 * len(typed) / max(len(steps), 1), len(paths),
              100.0 * weighted_typed / max(weighted, 1), len(good), len(paths)))
    all_steps = [x for s in ret["sites"] for p in s["paths"] for x in p["steps"][1:]]
    figure("%s leak: over the %d sites' paths shown: %d of %d steps (%.1f %%) typed"
           % (name, len(ret["sites"]), sum(map(typed_step, all_steps)), len(all_steps),
              100.0 * sum(map(typed_step, all_steps)) / max(len(all_steps), 1)))
    rows = {r["type"]: r for r in ret.get("types", [])}
    req = rows.get("%s.request" % mod)
    check("%s leak: retainers --by type counts %s %s.request blocks, the %d requests the table keeps"
          % (name, req["blocks"] if req else 0, mod, facts["requests_kept"]),
          req is not None and req["blocks"] == facts["requests_kept"])
    tbl = rows.get("(int, %s.request) Hashtbl.t" % mod)
    check("%s leak: (int, %s.request) Hashtbl.t retains %d bytes, within 5 %% of Obj.reachable_words "
          "of %s (%d)" % (name, mod, tbl["retained"] if tbl else 0, facts["holder"], facts["holder_bytes"]),
          tbl is not None and within(tbl["retained"], facts["holder_bytes"], 5))


def check_program(name):
    mod = module_name(name)
    planted = marked_lines(name, "(* planted *)")
    trace, facts, ok = run(name, "leak")
    if ok:
        leaks = tool_json("leaks", "--preset", "lwt", "--by", "location", "--json", "-n", "5", trace)
        rows = leaks["sites"]
        where = ["%s.ml:%d:" % (name, line) for line in planted]
        rank = next((i + 1 for i, r in enumerate(rows) if any(w in r["site"] for w in where)), None)
        check("%s leak: leaks --preset lwt ranks the planted line %s first" % (name, planted), rank == 1,
              "rank %s; first: %s" % (rank, rows[0]["site"] if rows else "none"))
        live = rows[rank - 1]["live_end_bytes"] if rank else 0
        check("%s leak: planted site's live bytes at the end %d within 5 %% of reachable_words' %d"
              % (name, live, facts["planted_bytes"]), within(live, facts["planted_bytes"], 5))
        ret = tool_json("retainers", "--preset", "lwt", "--json", "-n", "3", "--paths", "3",
                        "--site", "Dune__exe__%s\\.handle" % mod, trace)
        root = ret["roots"][0]
        check("%s leak: retainers' first root is the main module's global %s" % (name, mod),
              root["label"] == mod and root["kind"] == "global", "%s %s" % (root["kind"], root["label"]))
        check("%s leak: %s retains %d bytes, within 5 %% of Obj.reachable_words of %s (%d)"
              % (name, mod, root["retained"], facts["holder"], facts["holder_bytes"]),
              within(root["retained"], facts["holder_bytes"], 5))
        site = next((s for s in ret["sites"] if any("%s.ml:%d)" % (name, line) in s["site"] for line in planted)), None)
        paths = site["paths"] if site else []
        check("%s leak: a retainer path from global %s to the planted site's blocks" % (name, mod),
              any(p["steps"][0] == "global " + mod and any(w[:-1] + ")" in p["steps"][-1] for w in where)
                  for p in paths), json.dumps(paths[:1])[:300])
        steps = [s for p in paths for s in p["steps"][1:]]
        located = [s for s in steps if " from " in s]
        figure("%s leak: %d of %d blocks on the first %d retainer paths carry an allocation site "
               "(unsampled blocks have none)" % (name, len(located), len(steps), len(paths)))
        if name == "leak_table":
            check_typed_paths(name, mod, planted, trace, facts)
        figure("%s leak: planted line rank %s, live %d B vs reachable %d B (%+.1f %%); holder retained %d B vs "
               "reachable %d B (%+.2f %%)" % (name, rank, live, facts["planted_bytes"],
                                              100.0 * (live - facts["planted_bytes"]) / facts["planted_bytes"],
                                              root["retained"], facts["holder_bytes"],
                                              100.0 * (root["retained"] - facts["holder_bytes"]) / facts["holder_bytes"]))
        check_entry_share(name, "leak", trace)
        races = race_flags(trace)
        if races is None:
            print("skip %s leak: race flag (no chromium)" % name)
        else:
            check("%s leak: the report's allocation-race flag flags no site" % name, races == [], str(races))
        if name == "leak_pending":
            lwt = tool_json("lwt", "--json", trace)
            last = lwt["snapshots"][-1]
            figure("%s leak: %d snapshots; pending at each: %s" % (
                name, len(lwt["snapshots"]), ", ".join(str(s["pending"]) for s in lwt["snapshots"])))
            for kind, truth in sorted(facts["pending"].items()):
                lines = marked_lines(name, "(* pending: %s *)" % kind)
                est = next((s for s in last["sites"] if "%s.ml:%d)" % (name, lines[0]) in s["site"]), None)
                e, se = (est["pending"], est["se"]) if est else (0, 0)
                # in sd of the samples the truth gives (Poisson), as the
                # series: within 3.3 (0.1 %); the tools' 2 se, a 95 %
                # statement, is a figure (counted over runs in Changes)
                m = lwt["rate"] * lwt["words_per_pending_promise"] * truth
                z = ((est["samples"] if est else 0) - m) / m ** 0.5
                check("%s leak: pending promises created at line %d (%s) %.0f +- %.0f for the true %d: "
                      "%+.1f sd, within 3.3" % (name, lines[0], kind, e, se, truth, z), est and abs(z) <= 3.3)
                figure("%s leak: line %d (%s) %s 2 se of the truth" % (
                    name, lines[0], kind, "within" if est and abs(e - truth) <= 2 * se else "NOT within"))
            callbacks = facts["pending"]["wait"]  # each wait promise holds the map's callback
            check("%s leak: at least the %d callbacks of the pending wait promises counted (%d in all)"
                  % (name, callbacks, last["callbacks"]), last["callbacks"] >= callbacks)
            lines = {k: marked_lines(name, "(* pending: %s *)" % k)[0] for k in ("wait", "map")}
            taken = facts.get("snapshots", [])
            matched = matched_snapshots(name, trace, lwt, taken)
            expected = lwt["rate"] * lwt["words_per_pending_promise"]   # samples per promise
            shown = series_checks(name, "lwt --json's series", lwt["series"], expected, taken, matched, lines)
            figure("%s leak: series at the program's snapshots: %s" % (name, ", ".join(shown)))
            view = lwt_view(trace)
            if view is None:
                print("skip %s leak: the report's Lwt view (no chromium)" % name)
            else:
                import lwt_tests
                data, errors = view
                d = lwt_tests.compare(data, lwt) if data else ["no Lwt view"]
                check("%s leak: the report's Lwt view = lwt --json (created, every snapshot, series)" % name,
                      not d and not errors, "; ".join(d[:4] + errors[:2]))
                if data:
                    series_checks(name, "the report's Lwt view", data["traces"][0]["series"], expected, taken, matched,
                                  lines)
    trace, facts, ok = run(name, "control")
    if ok:
        leaks = tool_json("leaks", "--preset", "lwt", "--by", "location", "--json", "-n", "0", trace)
        # GC lag makes churn look like growth of a few samples' worth: a
        # site of the program is a finding when it scores 1 % of the leak.
        own = [r["site"] for r in leaks["sites"] if own_file.search(r["site"]) and r["score"] >= 80000]
        check("%s control: leaks --preset lwt scores no site of the program at 80 kB (1 %% of the leak) "
              "or more" % name, not own, str(own[:3]))
        figure("%s control: leaks lists %d site(s)%s" % (name, len(leaks["sites"]), "".join(
            "; %s (score %d B)" % (r["site"], r["score"]) for r in leaks["sites"][:3])))
        ret = tool_json("retainers", "--preset", "lwt", "--json", "-n", "50", trace)
        held = next((r["retained"] for r in ret["roots"] if r["label"] == mod), 0)
        check("%s control: %s retains %d bytes, under 1 %% of the leak's 8 MB" % (name, mod, held), held < 80000)
        check_entry_share(name, "control", trace)
        if name == "leak_pending":
            # A periodic snapshot may come in the middle of a request,
            # between its Lwt.wait and its wakeup (handle never yields in
            # between): that one request's promises are pending then, at
            # most one sampled block per site (a few words at the rate:
            # two samples on one block is a 1e-3 event).  The program's
            # own snapshots come after the wakeup: none.
            lwt = tool_json("lwt", "--json", trace)
            sites = ["%s.ml:%d)" % (name, marked_lines(name, "(* pending: %s *)" % k)[0]) for k in ("wait", "map")]
            ours = set(i for i in matched_snapshots(name, trace, lwt, facts.get("snapshots", [])) if i is not None)
            found = [(i, s) for i, sn in enumerate(lwt["snapshots"]) for s in sn["sites"]
                     if any(w in s["site"] for w in sites)]
            bad = ["%s at snapshot %d (%d samples)" % (s["site"], lwt["snapshots"][i]["seq"], s["samples"])
                   for i, s in found if i in ours or s["samples"] > 2]
            check("%s control: no pending promise at the creation sites in the program's %d snapshots, "
                  "at most one request's in the other %d" % (name, len(ours), len(lwt["snapshots"]) - len(ours)),
                  bool(ours) and not bad, str(bad[:3]))
            figure("%s control: %d periodic snapshot(s) caught a request in flight" % (
                name, len(set(i for i, _ in found))))
for name in names:
    try:
        check_program(name)
    except (RuntimeError, ValueError, KeyError, IndexError, subprocess.TimeoutExpired) as e:
        check("%s: analysed to the end" % name, False, str(e)[:300])
print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)

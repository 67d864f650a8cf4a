"""lwt_tests.py: tests of `ocaml-memprof lwt` and of the report's Lwt view,
run by run_tests.py; compare() and page_lwt() also serve
testsuite/lwt/check.py (real Lwt).

tests/lwt_like/pending.ml on the miniature Lwt of tests/lwt_like (Lwt
5.6.1's promise layout, Lwt's function names) leaves known numbers of
promises pending at two creation sites and takes a heap snapshot after
each of three rounds (its output gives the true counts).  Traced at rate
1, where every word is sampled and the estimates are exact:
- `lwt --json`: the series of each site (pending at each snapshot) and the
  callbacks they hold equal the true counts, the promises created equal
  the program's; the text's over-time table gives the same figures;
- a trace without Lwt (tests/leaky.ml) is refused (exit 1, one line
  naming it) and its report has no Lwt view;
- the report's Lwt view (headless Chromium): its tab shown, its figures
  (created per site, each snapshot's sites, the series) equal `lwt
  --json`'s, also with the page's stdlib preset ticked (= `lwt --preset
  stdlib`) and for a report written with --preset lwt (created counted
  from the stacks); no figure cut at 1,280 x 800; a screenshot not blank.
Traced at rate 1e-2 (seed 1): each site's series within 2 standard errors
of the truth at every snapshot, in the CLI and in the page."""
import json
import os
import re
import shutil

import cdp


def close(a, b):
    """Equal as `lwt --json` prints them (3 decimals)."""
    return abs(a - b) <= 0.001


def compare(page, cli):
    """Differences between the page's lwtData() (first trace) and `lwt
    --json`: created per site, each snapshot's exact totals and sites, the
    series."""
    diffs = []
    got = {r["site"]: r for r in page["created"]}
    want = {r["site"]: r for r in cli["created"]}
    if set(got) != set(want):
        diffs.append("created sites: page only %s, cli only %s" % (sorted(set(got) - set(want))[:3],
                                                                  sorted(set(want) - set(got))[:3]))
    for s in set(got) & set(want):
        for k in ("samples", "created", "se"):
            if not close(got[s][k], want[s][k]):
                diffs.append("created %s %s: page %s, cli %s" % (s, k, got[s][k], want[s][k]))
    tr = page["traces"][0] if page["traces"] else None
    snaps = tr["snapshots"] if tr else []
    if len(snaps) != len(cli["snapshots"]):
        return diffs + ["%d snapshots in the page, %d in the cli" % (len(snaps), len(cli["snapshots"]))]
    for p, c in zip(snaps, cli["snapshots"]):
        for k in ("seq", "time_ns", "pending", "callbacks", "pending_sampled"):
            if p[k] != c[k]:
                diffs.append("snapshot %s %s: page %s, cli %s" % (c["seq"], k, p[k], c[k]))
        ps, cs = {x["site"]: x for x in p["sites"]}, {x["site"]: x for x in c["sites"]}
        if set(ps) != set(cs):
            diffs.append("snapshot %s sites differ: %s vs %s" % (c["seq"], sorted(ps)[:3], sorted(cs)[:3]))
        for s in set(ps) & set(cs):
            for k in ("samples", "pending", "se", "callbacks", "callbacks_se"):
                if not close(ps[s][k], cs[s][k]):
                    diffs.append("snapshot %s %s %s: page %s, cli %s" % (c["seq"], s, k, ps[s][k], cs[s][k]))
    pser = [(x["site"], x["samples"]) for x in (tr["series"] if tr else [])]
    cser = [(x["site"], x["samples"]) for x in cli["series"]]
    if pser != cser:
        diffs.append("series: page %s, cli %s" % (json.dumps(pser)[:200], json.dumps(cser)[:200]))
    return diffs


# The Lwt view's figure cells cut (content wider than the cell), as
# report_tests.check_layout looks for them in the other views.
LAYOUT_JS = """(function () {
  S.tab = 'lwt'; syncControls(); drawView();
  var out = { cut: [], cells: 0 };
  document.querySelectorAll('#v-lwt td, #v-lwt th').forEach(function (c) {
    if (c.offsetParent === null || /\\bname\\b/.test(c.className) || !/[0-9]/.test(c.textContent)) return;
    out.cells++;
    if (c.scrollWidth > c.clientWidth) out.cut.push(c.textContent.trim().slice(0, 30));
  });
  return JSON.stringify(out);
})()"""


def page_lwt(browser, html, state=None, width=1280, height=800):
    """The page's Lwt data (lwtData(), after setting [state] into S), its
    console errors, whether its tab is shown, and the page."""
    page = browser.page(width, height)
    page.goto("file://" + os.path.abspath(html), "document.body && document.body.getAttribute('data-ready')",
              timeout=120)
    out = json.loads(page.eval(
        "S = freshState(); var st = %s; Object.keys(st).forEach(function (k) { S[k] = st[k]; }); S.tab = 'lwt';"
        "syncControls(); update(); JSON.stringify({data: lwtData(), tab: $('lwttab').style.display !== 'none'})"
        % json.dumps(state or {})))
    return out["data"], page.errors, out["tab"], page


def truths(stdout):
    """Per snapshot: {site kind: (pending, callbacks)} from pending.exe's lines."""
    out = []
    for line in stdout.splitlines():
        w = line.split()
        if w[:1] == ["snapshot"]:
            out.append({"wait": (int(w[2]), int(w[4])), "bind": (int(w[6]), 0)})
    return out


def site_lines(src):
    with open(src) as f:
        text = f.readlines()
    return {k: next(i + 1 for i, l in enumerate(text) if "(* pending: %s *)" % k in l) for k in ("wait", "bind")}


def series_of(cli, line):
    return next((s for s in cli["series"] if s["site"].endswith("(pending.ml:%d)" % line)), None)


def test_lwt_threads(check, tool, tool_json, run, work, here, ocamlopt, no_lwt_trace):
    src = os.path.join(here, "lwt_like")
    for f in ("lwt.ml", "pending.ml"):
        shutil.copy(os.path.join(src, f), work)
    r = run([ocamlopt, "-g", "lwt.ml", "pending.ml", "-o", "pending.exe"], cwd=work)
    check("lwt: compile tests/lwt_like/pending.ml", r.returncode == 0, r.stderr[-300:])
    if r.returncode != 0:
        return
    lines, n = site_lines(os.path.join(src, "pending.ml")), 100
    traces = {}
    for rate in ("1", "1e-2"):
        trace = os.path.join(work, "pending-%s.trace" % rate)
        env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=%s,memprof_seed=1" % (trace, rate))
        r = run([os.path.join(work, "pending.exe"), str(n if rate == "1" else 10 * n)], cwd=work, env=env)
        truth = truths(r.stdout)
        check("lwt: traced run of pending.exe at rate %s (3 snapshots)" % rate, r.returncode == 0 and len(truth) == 3,
              r.stderr[-300:])
        if r.returncode == 0 and len(truth) == 3:
            traces[rate] = (trace, truth)
    if "1" in traces:
        trace, truth = traces["1"]
        cli = tool_json("lwt", "--json", trace)
        bad = []
        for kind, line in lines.items():
            s = series_of(cli, line)
            want = [t[kind][0] for t in truth]
            if not s or [round(v, 6) for v in s["pending"]] != want:
                bad.append("%s: %s, truth %s" % (kind, s and s["pending"], want))
            for i, sn in enumerate(cli["snapshots"]):
                x = next((x for x in sn["sites"] if x["site"].endswith("(pending.ml:%d)" % line)), None)
                if not x or round(x["callbacks"], 6) != truth[i][kind][1]:
                    bad.append("%s callbacks at snapshot %d: %s, truth %d" % (kind, i + 1, x and x["callbacks"],
                                                                              truth[i][kind][1]))
        check("lwt --json at rate 1: each site's series (pending at the 3 snapshots) and callbacks = the truth "
              "(wait %s, bind %s)" % ([t["wait"][0] for t in truth], [t["bind"][0] for t in truth]), not bad,
              "; ".join(bad[:4]))
        created = {c["site"]: c["created"] for c in cli["created"]}
        got = [round(next((v for k, v in created.items() if k.endswith("(pending.ml:%d)" % line)), 0), 6)
               for line in lines.values()]
        check("lwt --json at rate 1: promises created per site = the program's (%s, %s)" % tuple(got),
              got == [6 * n, 6 * n], json.dumps(cli["created"])[:300])
        text = tool("lwt", trace).stdout
        m = re.search(r"Pending promises by creation site over time.*?\n.*?\n((?:\s+\d+\s+[\d.]+(?:\s+\d+)+\n)+)"
                      r"((?:  S\d+  .*\n)+)", text)
        rows = [[int(v) for v in l.split()[2:]] for l in m.group(1).splitlines()] if m else []
        legend = [l.split(None, 1)[1] for l in m.group(2).splitlines()] if m else []
        cols = []
        for line in lines.values():
            j = next((j for j, l in enumerate(legend) if l.endswith("(pending.ml:%d)" % line)), None)
            cols.append([r[j] for r in rows] if j is not None else None)
        check("lwt (text): the over-time table gives each site's series (%s)" % cols,
              cols == [[t[k][0] for t in truth] for k in lines], text[-600:])
    if no_lwt_trace and os.path.exists(no_lwt_trace):
        r = tool("lwt", no_lwt_trace)
        check("lwt on a trace without Lwt: exit 1, one line saying so",
              r.returncode == 1 and not r.stdout and len(r.stderr.splitlines()) == 1
              and "no Lwt promise in this trace" in r.stderr, r.stderr[-300:])
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome:
        print("skip lwt: the report's Lwt view (no chromium)")
        return
    with cdp.Browser(chrome) as b:
        if no_lwt_trace and os.path.exists(no_lwt_trace):
            html = os.path.join(work, "no-lwt.html")
            tool("report", "-o", html, no_lwt_trace)
            data, errors, shown, _ = page_lwt(b, html)
            check("report of a trace without Lwt: no Lwt view", data is None and not shown and not errors,
                  str(errors[:2]))
        for rate, (trace, truth) in sorted(traces.items()):
            html = os.path.join(work, "pending-%s.html" % rate)
            tool("report", "-o", html, trace)
            data, errors, shown, page = page_lwt(b, html)
            d = compare(data, tool_json("lwt", "--json", trace)) if data else ["no Lwt data"]
            check("report at rate %s: Lwt view shown, its figures = lwt --json's" % rate, shown and not d and not errors,
                  "; ".join(d[:4] + errors[:2]))
            if rate == "1":
                lay = json.loads(page.eval(LAYOUT_JS))
                check("report: the Lwt view at 1280x800 cuts no figure (%d cells)" % lay["cells"],
                      lay["cells"] > 0 and not lay["cut"], str(lay["cut"][:4]))
                png = os.path.join(work, "report-lwt.png")
                page.screenshot(png, "#v-lwt", 0.5)
                w, h, colours, ink = cdp.png_stats(png)
                check("report: a screenshot of the Lwt view is not blank (%d colours, %.1f %% ink)"
                      % (colours, 100 * ink), colours >= 4 and ink >= 0.02)
                data, errors, _, _ = page_lwt(b, html, {"presets": ["stdlib"]})
                d = compare(data, tool_json("lwt", "--json", "--preset", "stdlib", trace))
                check("report: with the page's stdlib preset, the Lwt view = lwt --preset stdlib", not d and not errors,
                      "; ".join(d[:4] + errors[:2]))
                html2 = os.path.join(work, "pending-preset.html")
                tool("report", "--preset", "lwt", "-o", html2, trace)
                data, errors, shown, _ = page_lwt(b, html2)
                d = compare(data, tool_json("lwt", "--json", trace)) if data else ["no Lwt data"]
                check("report --preset lwt: Lwt view shown (created from the stacks), = lwt --json", shown and not d
                      and not errors, "; ".join(d[:4] + errors[:2]))
            else:
                P = data["traces"][0]
                bad = []
                for kind, line in lines.items():
                    s = next((s for s in P["series"] if s["site"].endswith("(pending.ml:%d)" % line)), None)
                    for i, t in enumerate(truth):
                        e, se = (s["pending"][i], s["se"][i]) if s else (0, 0)
                        if not abs(e - t[kind][0]) <= 2 * se:
                            bad.append("%s at snapshot %d: %.0f +- %.0f, truth %d" % (kind, i + 1, e, se, t[kind][0]))
                check("report and lwt at rate 1e-2: each site's pending at each snapshot within 2 se of the truth",
                      not bad, "; ".join(bad[:4]))

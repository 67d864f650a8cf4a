"""Types in heap snapshots (issue 31): `retainers` on tests/types/snapleak.ml,
compiled with -g -bin-annot, its snapshot taken at exit.  Its leak is a
Hashtbl in a record in a module global; its other globals hold a variant
list, an option and refs, built at run time.

snapstd.ml holds a Queue, a Stack, a Buffer and a Map.Make (String) map
in globals: each unfolds from the standard library's .cmt files.
snaplocal.ml holds an array through an Obj.t ref and a list in a local:
its sampled blocks are typed by their allocation site, and the types flow
on from them.

Checks: the retainer path to the table's buckets is named by fields
(Snapleak.state.tbl.data.(_)); the table type's retained size is exactly
Obj.reachable_words (printed by the program: a snapshot is complete); the
globals and what they hold get their types; nothing the module holds is
left unknown; --no-types, a stripped executable, a stale .cmt and a
missing one keep today's names with one hint line.  As dune builds an
executable (its module compiled as the unit Dune__exe__Snap_leak, its
.cmt in _build/default/bin/.main.eobjs/byte/, two levels below the
executable): found from the executable's path alone, its global named
Snap_leak, its types Snap_leak.cache."""
import json
import os
import re
import shutil
import subprocess

from types_tests import fresh_dir, traced_types_program

TYPED = [
    "Snapleak.counter : int ref",
    "Snapleak.maybe : int list option",
    "Some : int list",
    ":: : int list",
    "Snapleak.shapes : Snapleak.shape list",
    "::.0 : Snapleak.shape",
    "Circle : float",
    "Named.label : string",
    "Snapleak.total : float list ref",
    ".contents : float list",
    "::.0 : float",
]


def test_snapshot_types(check, tool, run, out_dir, here, ocamlopt, helper):
    if not os.access(helper, os.X_OK):
        print("skip snapshot types tests: no %s" % helper)
        return
    work = fresh_dir(out_dir, "snaptypes")
    os.environ["OCAML_MEMPROF_TYPES"] = helper
    exe = os.path.join(work, "snapleak.exe")
    trace, r = traced_types_program(run, ocamlopt, here, work, ["snapleak.ml"],
                                    "memprof_rate=1e-3,memprof_seed=1,memprof_snapshot_at_exit=1",
                                    "s.trace")
    m = re.search(r"reachable_words (\d+)", r.stdout)
    check("snaptypes: traced run prints reachable_words", r.returncode == 0 and m, r.stderr[-300:])
    if not m:
        return
    words = int(m.group(1))

    r = tool("retainers", "--json", "--by", "type", "--site", "Hashtbl.replace", "--tree",
             "--width", "40", "--nodes", "4000", trace)
    check("snaptypes: retainers --json --by type runs, no hint", r.returncode == 0
          and "hint" not in r.stderr, r.stderr[-400:])
    if r.returncode != 0:
        return
    j = json.loads(r.stdout)
    types = {row["type"]: row for row in j["types"]}
    table = types.get("(string, bytes) Hashtbl.t")
    check("snaptypes: the table's retained size is Obj.reachable_words (%d words)" % words,
          table and table["retained"] == 8 * words, json.dumps(j["types"][:4]))
    paths = j["paths"]["paths"]
    steps = paths[0]["steps"] if paths else []
    names = [s.split(" : ")[0] for s in steps[1:5]]
    dotted = "".join(names)
    check("snaptypes: the path to the buckets is Snapleak.state.tbl.data.(_)",
          steps and steps[0] == "global Snapleak" and dotted == "Snapleak.state.tbl.data.(_)"
          and "Stdlib.Hashtbl.bucketlist (3 words)" in steps[4], json.dumps(steps))
    check("snaptypes: its steps are typed",
          len(steps) > 4 and steps[1].startswith("Snapleak.state : Snapleak.cache (")
          and steps[2].startswith(".tbl : (string, bytes) Hashtbl.t (")
          and steps[3].startswith(".data : (string, bytes) Stdlib.Hashtbl.bucketlist array ("),
          json.dumps(steps))
    tree = [n["name"] for n in j["tree"]]
    missing = [t for t in TYPED if not any(n.startswith(t + " ") for n in tree)]
    check("snaptypes: the variant, list, option and refs of the globals are typed",
          not missing, "missing %s in %s" % (missing, [n for n in tree if "Snapleak" in n]))
    root = [x for x in j["roots"] if x["label"] == "Snapleak"]
    unknown = types.get("(unknown)", {"self": 0})["self"]
    check("snaptypes: every block the module retains is typed",
          root and unknown <= j["snapshot"]["live_bytes"] - root[0]["retained"],
          "unknown %d, live %d, module %s" % (unknown, j["snapshot"]["live_bytes"], root))
    text = tool("retainers", "--by", "type", trace)
    check("snaptypes: text --by type lists the table with its retained size",
          text.returncode == 0 and re.search(r"\n\s+\S+ kB\s+\S+%\s+40 B\s+1\s+\(string, bytes\) "
                                             r"Hashtbl.t\n", text.stdout), text.stdout[-1500:])

    export = os.path.join(work, "s.heapsnapshot")
    r = tool("retainers", "--heapsnapshot", export, trace)
    strings = json.load(open(export))["strings"] if r.returncode == 0 else []
    check("snaptypes: --heapsnapshot names typed blocks by type (DevTools' constructor)",
          "(string, bytes) Hashtbl.t" in strings and "Snapleak.cache" in strings,
          r.stderr + str([x for x in strings if "Snap" in x][:10]))

    test_report_retention_types(check, tool, work, trace)

    def untyped(args, what, hint):
        """Today's names without a types hint; with --by type, exit 1 and
        one hint line containing [hint] (None: --no-types)."""
        r = tool("retainers", "--site", "Hashtbl.replace", *args, trace)
        check("snaptypes: %s: today's names, no types hint" % what,
              r.returncode == 0 and "-> block tag 0 (3 words)" in r.stdout
              and " : " not in r.stdout and "hint: types" not in r.stderr,
              r.stdout[-600:] + r.stderr)
        if hint:
            r = tool("retainers", "--by", "type", trace)
            lines = [l for l in r.stderr.splitlines() if "hint:" in l]
            check("snaptypes: %s: --by type exits 1 with one hint line" % what,
                  r.returncode == 1 and len(lines) == 1 and hint in lines[0], r.stderr)

    untyped(["--no-types"], "--no-types", None)
    shutil.copy(exe, exe + ".keep")
    subprocess.run(["strip", exe])
    untyped([], "stripped executable", "no global of the program's modules is named")
    os.replace(exe + ".keep", exe)
    with open(os.path.join(work, "snapleak.ml"), "a") as f:
        f.write("(* edited after the build *)\n")
    r = tool("retainers", "--site", "Hashtbl.replace", trace)
    check("snaptypes: stale .cmt: today's names, a hint naming it (asked or not)",
          "-> block tag 0 (3 words)" in r.stdout
          and [l for l in r.stderr.splitlines() if "hint" in l] ==
          [l for l in r.stderr.splitlines() if "stale" in l and "snapleak.cmt" in l] != [],
          r.stderr)
    r = tool("retainers", "--by", "type", trace)
    check("snaptypes: stale .cmt: --by type exits 1", r.returncode == 1, r.stderr)
    os.remove(os.path.join(work, "snapleak.cmt"))
    untyped([], "missing .cmt", "without a usable .cmt")

    trace, r = traced_types_program(run, ocamlopt, here, work, ["snaplocal.ml"],
                                    "memprof_rate=0.05,memprof_seed=2", "l.trace")
    check("snaptypes: snaplocal.ml compiled, traced run", r.returncode == 0, r.stderr[-500:])
    r = tool("retainers", "--json", "--by", "type", "--tree", trace)
    j = json.loads(r.stdout) if r.returncode == 0 else {"types": [], "tree": []}
    types = {row["type"]: row for row in j["types"]}
    check("snaptypes: the array held through Obj.t is typed by its site",
          types.get("Snaplocal.item array", {}).get("blocks") == 1, json.dumps(j["types"])[:800])
    check("snaptypes: its elements typed from it, named .(_)",
          types.get("Snaplocal.item", {}).get("blocks", 0) >= 990
          and any(n["name"].startswith(".(_) : Snaplocal.item ") for n in j["tree"]),
          json.dumps(j["types"])[:800])

    STD = ["Snapstd.q : string Queue.t", ".first : string Stdlib.Queue.cell",
           "Cons.next : string Stdlib.Queue.cell", "Snapstd.st : int list Stack.t",
           ".c : int list list", "Snapstd.b : Buffer.t", ".inner : Stdlib.Buffer.inner_buffer",
           "Snapstd.m : int Snapstd.SM.t ref", ".contents : int Snapstd.SM.t",
           "Node.l : int Stdlib.Map.Make(Ord).t"]
    trace, r = traced_types_program(run, ocamlopt, here, work, ["snapstd.ml"],
                                    "memprof_rate=0,memprof_snapshot_at_exit=1", "std.trace")
    check("snaptypes: snapstd.ml compiled, traced run", r.returncode == 0, r.stderr[-500:])
    r = tool("retainers", "--json", "--tree", "--depth", "8", "--nodes", "2000", trace)
    tree = [n["name"] for n in json.loads(r.stdout)["tree"]] if r.returncode == 0 else []
    missing = [t for t in STD if not any(n.startswith(t + " ") for n in tree)]
    check("snaptypes: Queue, Stack, Buffer and a Map.Make map are typed", not missing,
          "missing %s in %s" % (missing, [n for n in tree if " : " in n][:40]))

    # Dune's layout, without dune: the unit Dune__exe__Snap_leak (dune's
    # -o names it), its .cmt two levels below the executable, which
    # dune's byte rules write (its native ones write none).
    bdir = os.path.join(work, "dune", "_build", "default", "bin")
    objs = os.path.join(bdir, ".main.eobjs", "byte")
    os.makedirs(objs)
    shutil.copy(os.path.join(here, "types", "snapleak.ml"), os.path.join(bdir, "snap_leak.ml"))
    root = os.path.join(work, "dune", "_build", "default")
    r = run([ocamlopt, "-g", "-bin-annot", "-c", "-o", ".main.eobjs/byte/dune__exe__Snap_leak.cmx",
             "snap_leak.ml"], cwd=bdir)
    if r.returncode == 0:
        r = run([ocamlopt, "-g", "-o", "main.exe", ".main.eobjs/byte/dune__exe__Snap_leak.cmx"], cwd=bdir)
    check("snaptypes: dune's layout: compile unit Dune__exe__Snap_leak", r.returncode == 0
          and os.path.exists(os.path.join(objs, "dune__exe__Snap_leak.cmt")), r.stderr[-500:])
    if r.returncode != 0:
        return
    trace = os.path.join(work, "dune.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=1e-3,memprof_seed=1,"
               "memprof_snapshot_at_exit=1" % trace)
    r = run([os.path.join(bdir, "main.exe")], env=env, cwd=root)
    r = tool("retainers", "--json", "--by", "type", "--site", "Hashtbl.replace", trace)
    check("snaptypes: dune's layout: retainers --by type finds the .cmt, no hint",
          r.returncode == 0 and "hint" not in r.stderr, r.stderr[-400:])
    j = json.loads(r.stdout) if r.returncode == 0 else {"paths": {"paths": []}, "types": []}
    paths = j["paths"]["paths"]
    steps = paths[0]["steps"] if paths else []
    check("snaptypes: dune's layout: the path is global Snap_leak -> Snap_leak.state : Snap_leak.cache "
          "-> .tbl : (string, bytes) Hashtbl.t",
          len(steps) > 2 and steps[0] == "global Snap_leak"
          and steps[1].startswith("Snap_leak.state : Snap_leak.cache (")
          and steps[2].startswith(".tbl : (string, bytes) Hashtbl.t ("), json.dumps(steps))


def test_report_retention_types(check, tool, work, trace):
    """report --by type: the retention view's retainer paths are typed as
    retainers' (its snapshots analysed with the types); without --by type,
    by tag as before."""
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chrome:
        print("skip the report's typed retention view: no chromium")
        return
    import cdp
    steps = {}
    with cdp.Browser(chrome) as b:
        for by_type in (1, 0):
            html = os.path.join(work, "r%d.html" % by_type)
            r = tool("report", *(["--by", "type"] if by_type else []), "-o", html, trace)
            if r.returncode != 0:
                steps[by_type] = r.stderr
                continue
            p = b.page(1400, 1000)
            p.goto("file://" + html, "document.body && document.body.getAttribute('data-ready')",
                   timeout=120)
            last = json.loads(p.eval("JSON.stringify(SNAPS[0].list[SNAPS[0].list.length - 1])"))
            paths = [q["steps"] for site in last["sites"] for q in site["paths"]]
            steps[by_type] = [x for q in paths for x in q]
    typed = steps.get(1, [])
    check("snaptypes: report --by type: the retention view's paths typed as retainers' "
          "(Snapleak.state : Snapleak.cache, .tbl : (string, bytes) Hashtbl.t)",
          "Snapleak.state : Snapleak.cache (3 words)" in typed
          and ".tbl : (string, bytes) Hashtbl.t (4 words)" in typed, str(typed)[:800])
    check("snaptypes: report without --by type: the retention view's paths by tag",
          "block tag 0 (4 words)" in steps.get(0, []) and not any(" : " in x for x in steps.get(0, [])),
          str(steps.get(0))[:800])

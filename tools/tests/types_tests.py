"""`top --by type` (issue 31) on tests/types/: store.ml (a library whose
abstract values are built inside it: a functor, a first-class module, a
generic promise) and prog.ml (records, variants, tuples, closures, an
object, refs, polymorphic variants, Array.make and Hashtbl.replace
instantiated at several types), compiled with -g -bin-annot and traced.

Each probe is a --focus regex that selects the samples of one allocating
function and the one type they must have.  A sample's type is exact (the
probe's), imprecise ("unknown (...)" or a type with variables left: true
but not what the user needs) or wrong (anything else).  Checks: at least
90 % of the live sampled bytes typed exactly, none wrong; a .cmt made stale
by editing its source after the build gives unknown and the stale hint;
the answers are cached (a second run reads no .cmt)."""
import json
import os
import shutil
import time

PROBES = [
    (r"^Prog\.retain$", "Obj.t list"),
    (r"^Prog\.alloc_point$", "Prog.point"),
    (r"^Prog\.alloc_circle$", "Prog.shape"),
    (r"^Prog\.alloc_square$", "Prog.shape"),
    (r"^Prog\.alloc_tuple$", "int * Prog.point"),
    (r"^Prog\.alloc_int_tree$", "int Prog.tree"),
    (r"^Prog\.alloc_closure", "int -> int"),
    (r"^CamlinternalOO\.create_object_opt$", "< size : int >"),
    (r"^Prog\.alloc_ref$", "int ref"),
    (r"^Prog\.alloc_string_array$", "string array"),
    (r"^Prog\.alloc_point_array$", "Prog.point array"),
    (r"^Prog\.alloc_polyvar$", "[> `Tag of int ]"),
    (r"^Store\.Make\.cell$", "Store.Make(X).cell"),
    (r"^Store\.counter$", "(module COUNTER)"),
    (r"^Store\.Promise\.make$", "int Store.Promise.t"),
]
# Functions with several allocations: Hashtbl.replace's bucket and the
# array of a resize (its stack goes from add_int_points to resize: replace
# tail-calls it), Store.add's record and list cell, the promise state and
# the promise of resolved.
MULTI = [
    (r"^Prog\.add_int_points$", {"(int, Prog.point list) Stdlib.Hashtbl.bucketlist",
                                  "(int, Prog.point list) Stdlib.Hashtbl.bucketlist array"}),
    (r"^Store\.add$", {"Store.entry", "Store.entry list",
                       "(string, Store.entry) Stdlib.Hashtbl.bucketlist",
                       "(string, Store.entry) Stdlib.Hashtbl.bucketlist array"}),
    (r"^Store\.Promise\.resolved$", {"string Store.Promise.t", "string Store.Promise.state"}),
]


def imprecise(ty):
    return ty.startswith("unknown") or "'" in ty


def fresh_dir(out_dir, name):
    work = os.path.join(out_dir, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    return work


def traced_types_program(run, ocamlopt, here, work, sources, params, trace_name="t.trace",
                         args=(), flags=()):
    """tests/types/SOURCES copied into WORK and compiled there with -g
    -bin-annot (and FLAGS) into the last source's .exe, run with ARGS and
    OCAMLRUNPARAM=memprof=WORK/TRACE_NAME,PARAMS: (the trace's path, the
    run's result, or the compiler's when it failed)."""
    for f in sources:
        shutil.copy(os.path.join(here, "types", f), work)
    exe = os.path.join(work, os.path.splitext(sources[-1])[0] + ".exe")
    r = run([ocamlopt, "-g", "-bin-annot"] + list(flags) + list(sources) + ["-o", exe], cwd=work)
    trace = os.path.join(work, trace_name)
    if r.returncode != 0:
        return trace, r
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,%s" % (trace, params))
    return trace, run([exe] + list(args), env=env, cwd=work)


def test_types(check, tool, run, out_dir, here, ocamlopt, helper):
    if not os.access(helper, os.X_OK):
        print("skip --by type tests: no %s (built when PREFIX has compiler-libs)" % helper)
        return
    work = fresh_dir(out_dir, "types")
    # The helper under test (wherever the tool under test is: check-asan),
    # through a script that counts its runs.
    helper_log = os.path.join(work, "helper.log")
    wrapper = os.path.join(work, "helper.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\necho run >> '%s'\nexec '%s'\n" % (helper_log, helper))
    os.chmod(wrapper, 0o755)
    os.environ["OCAML_MEMPROF_TYPES"] = wrapper
    trace, r = traced_types_program(run, ocamlopt, here, work, ["store.ml", "prog.ml"],
                                    "memprof_rate=1e-3,memprof_seed=1")
    check("types: tests/types compiled with -g -bin-annot, traced run",
          r.returncode == 0 and os.path.exists(trace), r.stderr[-500:])
    if r.returncode != 0:
        return
    cache = os.path.join(work, "cache")
    os.environ["XDG_CACHE_HOME"] = cache

    def by_type(*args):
        r = tool("top", "--by", "type", "--json", "-n", "0", *args, trace)
        if r.returncode != 0:
            raise RuntimeError("top --by type failed: " + r.stderr.strip())
        return json.loads(r.stdout), r.stderr

    t0 = time.time()
    whole, err = by_type()
    cold = time.time() - t0
    total = whole["total"]["live_bytes"]
    exact = wrong = 0.0
    details = []
    for regex, want in PROBES + MULTI:
        wants = want if isinstance(want, set) else {want}
        rows = by_type("--focus", regex)[0]["rows"]
        check("types: probe %s has samples" % regex, rows, regex)
        for row in rows:
            if row["key"] in wants:
                exact += row["live_bytes"]
            elif not imprecise(row["key"]):
                wrong += row["live_bytes"]
                details.append("%s: %s" % (regex, row["key"]))
    share = exact / total if total else 0
    print("     types: %.1f %% of %.1f MB live typed exactly, %.0f bytes wrong; cold %.3f s"
          % (100 * share, total / 1e6, wrong, cold))
    check("types: >= 90 %% of live sampled bytes typed exactly (%.1f %%)" % (100 * share),
          share >= 0.9, json.dumps(whole["rows"][:8])[:600])
    check("types: no sample of a probe gets another type", wrong == 0, "; ".join(details))
    check("types: no missing or stale .cmt hint on a fresh build",
          "hint:" not in err, err)

    # The cache: a second run runs no helper and answers the same.
    t0 = time.time()
    again, _ = by_type()
    warm = time.time() - t0
    with open(helper_log) as f:
        runs = len(f.readlines())
    check("types: second run answered from the cache, the helper ran once "
          "(%.3f s vs %.3f s cold)" % (warm, cold),
          again["rows"] == whole["rows"] and runs == 1, "%d helper runs" % runs)

    # Without the helper and without a cache: a one-line error, status 1.
    shutil.rmtree(cache)
    os.environ["OCAML_MEMPROF_TYPES"] = "/nonexistent/ocaml-memprof-types"
    r = tool("top", "--by", "type", trace)
    os.environ["OCAML_MEMPROF_TYPES"] = wrapper
    check("types: a missing helper is a one-line error, exit 1",
          r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1, r.stderr)

    # A stale .cmt: prog.ml edited after the build.  Its sites become
    # unknown with the stale reason and hint; store.ml's keep their types.
    time.sleep(0.01)
    with open(os.path.join(work, "prog.ml"), "a") as f:
        f.write("(* edited after the build *)\n")
    stale, err = by_type()
    keys = {row["key"]: row["live_bytes"] for row in stale["rows"]}
    prog_types = [k for k in keys if "Prog." in k and not k.startswith("unknown")]
    check("types: stale prog.cmt: its sites unknown (stale .cmt: ...), none typed",
          any(k.startswith("unknown (stale .cmt: ") and k.endswith("prog.cmt)") for k in keys)
          and not prog_types, str(prog_types) + str(list(keys))[:400])
    check("types: stale prog.cmt: store.ml's sites keep their types",
          "Store.entry" in keys, str(list(keys))[:400])
    check("types: stale prog.cmt: one hint line names it",
          any("hint: 1 stale or foreign .cmt file ignored (" in l and "prog.cmt" in l
              for l in err.splitlines()), err)

    # A missing .cmt: its source files are named in the hint.
    store_cmt = os.path.join(work, "store.cmt")
    saved_cmt = os.path.join(out_dir, "types-store.cmt")
    shutil.copy2(store_cmt, saved_cmt)
    os.remove(store_cmt)
    _, err = by_type()
    check("types: missing store.cmt: the hint names store.ml",
          any("hint: no .cmt for " in l and "store.ml" in l for l in err.splitlines()),
          err)
    # Those answers are cached; a file other than a .cmt added to the
    # directory keeps them (no helper run)...
    with open(helper_log) as f:
        runs = len(f.readlines())
    with open(os.path.join(work, "unrelated.txt"), "w") as f:
        f.write("not a .cmt\n")
    _, err = by_type()
    with open(helper_log) as f:
        again = len(f.readlines())
    check("types: an unrelated file added beside the .cmt files keeps the cached answers",
          again == runs and "store.ml" in err, "%d helper runs" % (again - runs))
    # ... but the .cmt coming back (as dune build @check writes an
    # executable's after the build: an old modification time, so only the
    # directory's listing tells) drops them: store.ml's sites are typed
    # again, without the hint.
    shutil.copy2(saved_cmt, store_cmt)
    back, err = by_type()
    keys = [row["key"] for row in back["rows"]]
    check("types: store.cmt back (its old mtime): the cached \"no .cmt\" answers are "
          "dropped, Store.entry typed again, no missing hint",
          "Store.entry" in keys and not any("no .cmt for store.ml" in k for k in keys)
          and "hint: no .cmt" not in err, err + str(keys)[:400])
    test_types_views(check, tool, run, out_dir, here, ocamlopt, other_install(ocamlopt),
                     helper_log)
    test_types_printf(check, tool, run, out_dir, here, ocamlopt)


def test_types_printf(check, tool, run, out_dir, here, ocamlopt):
    """tests/types/printfy.ml: Printf and Format at every step.  Most of
    its bytes are Printf's and Format's own: CamlinternalFormat's
    accumulators, whose type (b, c) acc the printing function applied by
    the program fixes, and closures and records whose expressions span
    several lines (the trace's end column is that of their last line)."""
    work = fresh_dir(out_dir, "types-printf")
    trace, r = traced_types_program(run, ocamlopt, here, work, ["printfy.ml"],
                                    "memprof_rate=1e-3,memprof_seed=1", args=["100000"])
    check("types printf: tests/types/printfy.ml compiled, traced run", r.returncode == 0,
          r.stderr[-500:])
    if r.returncode != 0:
        return
    r = tool("top", "--by", "type", "--json", "-n", "0", trace)
    rows = json.loads(r.stdout)["rows"] if r.returncode == 0 else []
    keys = {row["key"]: row["alloc_bytes"] for row in rows}
    total = sum(keys.values())
    check("types printf: every allocation's expression found (no \"no expression at\": "
          "multi-line closures and records, let-bound functions' closures)",
          rows and not [k for k in keys if "no expression at" in k],
          str([k for k in keys if k.startswith("unknown")])[:600])
    want = ["(unit, string) CamlinternalFormat.acc", "(Buffer.t, unit) CamlinternalFormat.acc",
            "(out_channel, unit) CamlinternalFormat.acc", "Printfy.entry", "int -> int -> int",
            "Stdlib.Format.formatter"]
    check("types printf: the accumulators of sprintf, bprintf and fprintf instantiated, the "
          "multi-line record Printfy.entry, the local closure int -> int -> int, asprintf's "
          "formatter", all(w in keys for w in want),
          str([w for w in want if w not in keys]) + str(list(keys))[:600])
    # A locally abstract type (make_printf's b and c, a GADT branch's x) is
    # never printed as if it were a type: as a variable ('b) if at all.
    bare = [k for k in keys if k == "x" or "(b, c)" in k]
    check("types printf: no locally abstract type printed as a type (x, (b, c) acc)",
          not bare, str(bare))
    exact = sum(v for k, v in keys.items() if not imprecise(k) and k not in bare)
    share = exact / total if total else 0
    print("     types printf: %.1f %% of %.0f MB allocated typed exactly" % (100 * share, total / 1e6))
    check("types printf: >= 75 %% of the allocated bytes typed exactly (%.1f %%; 53.8 %% "
          "before multi-line locations and Printf's accumulators)" % (100 * share),
          share >= 0.75, json.dumps(rows[:8])[:600])

    # A same-named wrapper that tail-calls Hashtbl.add: its type is not
    # Hashtbl.add's (the previous helper said (int, 'a) bucketlist).
    trace, r2 = traced_types_program(run, ocamlopt, here, work, ["tailwrap.ml"],
                                     "memprof_rate=1e-2,memprof_seed=1", "w.trace")
    r3 = tool("top", "--by", "type", "--json", "-n", "0", trace) if r2.returncode == 0 else r2
    keys = [row["key"] for row in json.loads(r3.stdout)["rows"]] if r3.returncode == 0 else []
    buckets = [k for k in keys if k.endswith("Hashtbl.bucketlist")]
    check("types printf: a wrapper add tail-calling Hashtbl.add: the buckets are "
          "(string, int * int) Stdlib.Hashtbl.bucketlist, never typed by the wrapper's own type",
          buckets == ["(string, int * int) Stdlib.Hashtbl.bucketlist"],
          r2.stderr[-300:] + str(keys))
    check("types printf: SM.add (module SM = Map.Make (String)) instantiates Map.Make's "
          "add: float Stdlib.Map.Make(Ord).t",
          "float Stdlib.Map.Make(Ord).t" in keys, str(keys))

    # Two allocations that one trace location names: unknown, never either.
    trace, r2 = traced_types_program(run, ocamlopt, here, work, ["ambiguous.ml"],
                                     "memprof_rate=1e-2,memprof_seed=1", "a.trace",
                                     flags=["-inline", "0"])
    r3 = tool("top", "--by", "type", "--json", "-n", "0", trace) if r2.returncode == 0 else r2
    keys = [row["key"] for row in json.loads(r3.stdout)["rows"]] if r3.returncode == 0 else []
    check("types printf: two tuples of one start and end column, ending on different lines: "
          "unknown (expressions ending on different lines ...), neither tuple type",
          any(k.startswith("unknown (expressions ending on different lines at ambiguous.ml:7:2-2")
              for k in keys)
          and "string * string" not in keys and "(string * string) * string" not in keys,
          r2.stderr[-300:] + str(keys))


def other_install(ocamlopt):
    """The bin directory of the +memprof install of the other version
    built in the same tree (_install and _install-5.4.1), or
    $OCAMLMEMPROF_OTHER_BIN; None when there is none.  Its reader is the
    ocaml-memprof-types installed there, or $OCAMLMEMPROF_OTHER_TYPES."""
    if os.environ.get("OCAMLMEMPROF_OTHER_BIN"):
        return os.environ["OCAMLMEMPROF_OTHER_BIN"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(ocamlopt)))
    other = root + "-5.4.1" if os.path.basename(root) == "_install" else \
        root[:-len("-5.4.1")] if root.endswith("_install-5.4.1") else None
    ok = other and os.access(os.path.join(other, "bin", "ocamlopt"), os.X_OK) \
        and os.access(os.path.join(other, "bin", "ocaml-memprof-types"), os.X_OK)
    return os.path.join(other, "bin") if ok else None


def pprof_type_totals(path):
    """alloc_space (the second value) summed per "type" label of a gzip
    profile.proto, decoded by hand: {type: bytes}."""
    import gzip

    def fields(buf):
        i = 0
        while i < len(buf):
            key, i = varint(buf, i)
            wire = key & 7
            if wire == 0:
                v, i = varint(buf, i)
            elif wire == 2:
                n, i = varint(buf, i)
                v, i = buf[i:i + n], i + n
            else:
                raise ValueError("wire type %d" % wire)
            yield key >> 3, v

    def varint(buf, i):
        v = shift = 0
        while True:
            b = buf[i]
            i += 1
            v |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return v, i

    def packed(buf):
        out, i = [], 0
        while i < len(buf):
            v, i = varint(buf, i)
            out.append(v)
        return out

    data = gzip.open(path).read()
    strings, samples = [], []
    for f, v in fields(data):
        if f == 6:
            strings.append(v.decode())
        elif f == 2:
            values, labels = [], []
            for g, w in fields(v):
                if g == 2:
                    values = packed(w)
                elif g == 3:
                    labels.append(dict(fields(w)))
            samples.append((values, labels))
    totals = {}
    for values, labels in samples:
        types = [strings[l[2]] for l in labels if strings[l[1]] == "type"]
        if len(types) != 1:
            return None
        totals[types[0]] = totals.get(types[0], 0) + values[1]
    return totals


def test_report_types(check, tool, work, trace, top_alloc):
    """report --by type on the leak trace, in headless Chromium: the
    timeline's first band is Leak.session, the Types view lists the types
    top --by type lists, and clicking Leak.session keeps its bytes only."""
    import cdp
    html = os.path.join(work, "r.html")
    r = tool("report", "--by", "type", "-o", html, trace)
    check("types views: report --by type writes the page", r.returncode == 0, r.stderr)
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    if r.returncode != 0 or not chrome:
        print("skip report --by type in the browser: no chromium")
        return
    with cdp.Browser(chrome) as b:
        p = b.page(1400, 1000)
        p.goto("file://" + html, "document.body && document.body.getAttribute('data-ready')",
               timeout=120)
        bands = json.loads(p.eval("JSON.stringify(typeBands().shown.map(function (x) { "
                                  "return typeName(x.id); }))"))
        p.eval("S.tab = 'types'; syncControls(); update(); 1")
        rows = json.loads(p.eval("JSON.stringify(Array.from(document.querySelectorAll("
                                 "'#typestable tr[data-type]')).map(function (t) { "
                                 "return t.dataset.type; }))"))
        p.eval("document.querySelector('#typestable tr[data-type=\"Leak.session\"]').click(); 1")
        picked = json.loads(p.eval("JSON.stringify({type: S.type, alloc: R.total.alloc, "
                                   "bands: typeBands().shown.length})"))
        errors = p.errors
    check("types views: report --by type: the timeline stacks Leak.session first",
          bands[:1] == ["Leak.session"], str(bands))
    check("types views: report --by type: the Types view lists top --by type's types",
          sorted(rows) == sorted(top_alloc), "%s vs %s" % (rows, sorted(top_alloc)))
    check("types views: report --by type: clicking Leak.session keeps its %.0f bytes only"
          % top_alloc.get("Leak.session", 0),
          picked["alloc"] == top_alloc.get("Leak.session") and picked["bands"] == 1
          and not errors, "%s %s" % (picked, errors))


def test_types_views(check, tool, run, out_dir, here, ocamlopt, other_bin, helper_log):
    """The views by type on tests/types/leak.ml, whose only growing type is
    Leak.session: timeline --by type (the evolution graph), leaks --by
    type, pprof --by type; then a trace of another OCaml version."""
    work = fresh_dir(out_dir, "types-leak")
    trace, r = traced_types_program(run, ocamlopt, here, work, ["leak.ml"],
                                    "memprof_rate=1e-3,memprof_seed=1")
    check("types views: tests/types/leak.ml compiled, traced run", r.returncode == 0,
          r.stderr[-500:])
    if r.returncode != 0:
        return

    # Answers cached by prefix: a second run starts no helper, also for the
    # chains of 8 frames of nest's recursion (answered for that chain only).
    def helper_runs():
        with open(helper_log) as f:
            return len(f.readlines())
    first = tool("top", "--by", "type", "--json", "-n", "0", trace)
    runs = helper_runs()
    second = tool("top", "--by", "type", "--json", "-n", "0", trace)
    nest = [r_["key"] for r_ in json.loads(first.stdout)["rows"] if "list" in r_["key"]]
    check("types views: a second top --by type starts no helper and answers the same "
          "(nest's allocations: %s)" % nest,
          first.returncode == 0 and first.stdout == second.stdout and helper_runs() == runs
          and nest, "%d helper runs" % (helper_runs() - runs))

    # The evolution graph: Leak.session rises steadily, every other band
    # is flat after the start (its range over the second half below a
    # fifth of the leak's rise: the churning types' live bytes stay within
    # the 2 MB minor heap).
    r = tool("timeline", "--by", "type", "--json", trace)
    check("types views: timeline --by type --json", r.returncode == 0, r.stderr)
    if r.returncode != 0:
        return
    tl = json.loads(r.stdout)
    bands = {t["type"]: t["live_bytes"] for t in tl["types"]}
    bands["(other types)"] = tl["other_types"]["live_bytes"]
    n = len(tl["time_s"])
    leak = bands.get("Leak.session", [])
    rise = leak[-1] - leak[0] if leak else 0
    # Sessions never die: their level never falls (times are the machine's,
    # so a pause of the process makes a flat stretch, not a fall).
    check("types views: timeline --by type: Leak.session first, never falling, rising by "
          "%.1f MB" % (rise / 1e6),
          tl["types"][0]["type"] == "Leak.session" and rise > 10e6
          and all(b >= a for a, b in zip(leak, leak[1:])), json.dumps(tl["types"][0])[:300])
    flat = {k: max(v[n // 2:]) - min(v[n // 2:]) for k, v in bands.items() if k != "Leak.session"}
    check("types views: timeline --by type: every other type flat over the second half "
          "(largest range %.2f MB)" % (max(flat.values()) / 1e6 if flat else 0),
          flat and all(v < rise / 5 for v in flat.values()), str(flat))
    sums = [sum(b[i] for b in bands.values()) for i in range(n)]
    check("types views: timeline --by type: the bands add up to the live bytes",
          sums == tl["live_bytes"], "%s vs %s" % (sums[:5], tl["live_bytes"][:5]))
    r = tool("timeline", "--by", "type", "--csv", "-n", "2", trace)
    lines = r.stdout.splitlines()
    check("types views: timeline --by type --csv -n 2: two type columns and the others",
          r.returncode == 0 and lines[0] == "time_s,live_bytes,Leak.session,Leak.session array,"
          "other_types" and len(lines) == n + 1, "\n".join(lines[:3]))
    r = tool("timeline", "--by", "type", trace)
    check("types views: timeline --by type: an SVG of stacked bands naming the types",
          r.returncode == 0 and r.stdout.count('<polygon class="type"') >= 3
          and "Leak.session</text>" in r.stdout, r.stderr + r.stdout[:200])

    r = tool("leaks", "--by", "type", "--json", trace)
    lk = json.loads(r.stdout) if r.returncode == 0 else {"sites": []}
    check("types views: leaks --by type ranks Leak.session first",
          lk["sites"] and lk["sites"][0]["site"] == "Leak.session",
          json.dumps(lk["sites"][:2])[:300])

    pb = os.path.join(work, "t.pb.gz")
    r = tool("pprof", "--by", "type", "-o", pb, trace)
    totals = pprof_type_totals(pb) if r.returncode == 0 else None
    top = tool("top", "--by", "type", "--json", "-n", "0", trace)
    want = {row["key"]: row["alloc_bytes"] for row in json.loads(top.stdout)["rows"]}
    check("types views: pprof --by type: one type label per sample, alloc_space per type "
          "= top --by type's, to the byte", totals == want,
          "%s vs %s" % (str(totals)[:300], str(want)[:300]))
    if shutil.which("go"):
        g = run(["go", "tool", "pprof", "-tags", pb])
        check("types views: go tool pprof -tags lists the type label",
              g.returncode == 0 and "type: Total" in g.stdout and "Leak.session" in g.stdout,
              g.stdout[:300] + g.stderr[-300:])
    test_report_types(check, tool, work, trace, want)
    r = tool("timeline", "--cmt-path", work, trace)
    check("types views: --cmt-path without --by type is a usage error (exit 2)",
          r.returncode == 2 and "--cmt-path goes with --by type" in r.stderr, r.stderr)

    # A trace of another OCaml version: the reader of this one says so and
    # types nothing; the other version's own reader types it.
    if not other_bin:
        print("skip --by type across versions: no other +memprof install")
        return
    other = fresh_dir(work, "other")
    otrace, r2 = traced_types_program(run, os.path.join(other_bin, "ocamlopt"), here, other,
                                      ["leak.ml"], "memprof_rate=1e-3,memprof_seed=1")
    check("types views: a trace of the other version's leak.exe", r2.returncode == 0,
          r2.stderr[-300:])
    if r2.returncode != 0:
        return
    version = run([os.path.join(other_bin, "ocamlopt"), "-version"]).stdout.strip()
    r = tool("top", "--by", "type", "--json", "-n", "0", otrace)
    keys = [row["key"] for row in json.loads(r.stdout)["rows"]] if r.returncode == 0 else []
    typed = [k for k in keys if not k.startswith("unknown")]
    check("types views: a trace of OCaml %s with this version's reader: no type, the reason "
          "names both versions, one hint" % version,
          keys and not typed and any(("a program of OCaml %s" % version) in k for k in keys)
          and sum("hint: the trace is of OCaml %s" % version in l
                  for l in r.stderr.splitlines()) == 1,
          str(keys[:3]) + r.stderr)
    other_helper = os.environ.get("OCAMLMEMPROF_OTHER_TYPES",
                                  os.path.join(other_bin, "ocaml-memprof-types"))
    probe = run([other_helper], input="version\t%s\n" % version)
    if probe.returncode != 0:
        print("skip --by type with OCaml %s's reader: %s predates this tree's protocol "
              "(rebuild that install, or set OCAMLMEMPROF_OTHER_TYPES)" % (version, other_helper))
        return
    os.environ["OCAML_MEMPROF_TYPES"], saved = other_helper, os.environ["OCAML_MEMPROF_TYPES"]
    r = tool("leaks", "--by", "type", "--json", otrace)
    os.environ["OCAML_MEMPROF_TYPES"] = saved
    lk = json.loads(r.stdout) if r.returncode == 0 else {"sites": []}
    check("types views: the same trace with OCaml %s's reader: leaks --by type ranks "
          "Leak.session first" % version,
          lk["sites"] and lk["sites"][0]["site"] == "Leak.session" and "hint" not in r.stderr,
          json.dumps(lk["sites"][:2])[:300] + r.stderr)

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


def test_types(check, tool, run, out_dir, here, ocamlopt, helper):
    if not os.access(helper, os.X_OK):
        print("skip --by type tests: no %s (built when PREFIX has compiler-libs)" % helper)
        return
    work = os.path.join(out_dir, "types")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    # The helper under test (wherever the tool under test is: check-asan),
    # through a script that counts its runs.
    helper_log = os.path.join(work, "helper.log")
    wrapper = os.path.join(work, "helper.sh")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\necho run >> '%s'\nexec '%s'\n" % (helper_log, helper))
    os.chmod(wrapper, 0o755)
    os.environ["OCAML_MEMPROF_TYPES"] = wrapper
    for f in ("store.ml", "prog.ml"):
        shutil.copy(os.path.join(here, "types", f), work)
    r = run([ocamlopt, "-g", "-bin-annot", "store.ml", "prog.ml", "-o", "prog.exe"], cwd=work)
    check("types: compile tests/types with -g -bin-annot", r.returncode == 0, r.stderr[-500:])
    if r.returncode != 0:
        return
    trace = os.path.join(work, "t.trace")
    env = dict(os.environ, OCAMLRUNPARAM="memprof=%s,memprof_rate=1e-3,memprof_seed=1" % trace)
    r = run([os.path.join(work, "prog.exe")], env=env, cwd=work)
    check("types: traced run", r.returncode == 0 and os.path.exists(trace), r.stderr[-300:])
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
    os.remove(os.path.join(work, "store.cmt"))
    _, err = by_type()
    check("types: missing store.cmt: the hint names store.ml",
          any("hint: no .cmt for " in l and "store.ml" in l for l in err.splitlines()),
          err)

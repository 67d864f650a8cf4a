/* cmd_ctf.c: `ocaml-memprof ctf`: export any trace as memtrace CTF v2 or v3.

   Streams events straight from the reader to ctf_writer; in version 2 all
   domains are merged into the single stream, in version 3 each has its
   own and a block's promotion and collection go in its allocating
   domain's stream.  With filters, a first pass finds the allocations that
   pass (kept_allocations).  What the conversion must repair so
   that memtrace and memtrace_viewer accept the result (spec section 16):
   - ids: the writer numbers allocations (0,1,2... in version 2, from
     per-domain ranges in version 3); a map from input id to a small live
     record (output id, domain, source, promoted) translates
     promotions and collections, and drops those of unknown blocks;
   - time: merged streams are not globally ordered, so times are clamped
     to be non-decreasing (per stream: over the file in version 2), which
     keeps every collection after its allocation;
   - promotions only of minor blocks, at most once; collections once;
   - location codes: the location's address when it is usable (non-zero,
     below 2^62, not already taken), else a synthetic code; so a CTF input
     keeps its codes and re-encodes byte for byte.
   Non-allocation events (GC cycles, domains) have no CTF equivalent. */

#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "ctf_writer.h"
#include "report.h"
#include "trace_input.h"
#include "util.h"

typedef struct {
  uint64_t out_id;
  uint16_t domain;             /* its stream in the output (version 3) */
  uint8_t minor, promoted;
} live_rec;

typedef struct {
  ti_trace *t;
  uint64_t *code_of;           /* location id -> CTF code (0 = not yet) */
  size_t code_cap;
  u64map code_loc;             /* CTF code -> location id */
  uint64_t next_synth;
} codes;

static uint64_t code_for(codes *k, uint32_t loc)
{
  if (loc >= k->code_cap) {
    size_t old = k->code_cap;
    grow_array((void **)&k->code_of, &k->code_cap, (size_t)loc + 1, sizeof *k->code_of);
    memset(k->code_of + old, 0, (k->code_cap - old) * sizeof *k->code_of);
  }
  if (k->code_of[loc]) return k->code_of[loc];
  const mpt_location *l = ti_location(k->t, loc);
  uint64_t c = l ? l->address : 0;
  if (c == 0 || c >= (1ULL << 62) || u64map_get(&k->code_loc, c)) {
    do c = k->next_synth++; while (u64map_get(&k->code_loc, c));
  }
  k->code_of[loc] = c;
  u64map_put(&k->code_loc, c, loc);
  return c;
}

static const mpt_location *lookup(void *u, uint64_t code)
{
  codes *k = u;
  uint32_t *loc = u64map_get(&k->code_loc, code);
  return loc ? ti_location(k->t, *loc) : NULL;
}

/* Marshal samples: memtrace has no "unmarshalled" source; such a block is
   exported as minor when the trace later promotes it (so the promotion is
   kept: only minor blocks may be promoted in CTF), else as major.  A first
   pass over the file finds them: bit k of the result is set when the k-th
   marshal allocation is promoted.  Returns NULL when there are none. */
static uint64_t *promoted_marshal(const char *path)
{
  char err[512];
  ti_trace *t = ti_open(path, err, sizeof err);
  if (!t) return NULL;
  idtab ord;                   /* block id -> marshal ordinal + 1 */
  idtab_init(&ord);
  uint64_t *bits = NULL, n = 0;
  size_t cap = 0;
  int any = 0;
  mpt_event ev;
  while (ti_next(t, &ev) == TI_OK) {
    if (ev.kind == MPT_EV_ALLOC) {
      uint32_t old;
      idtab_del(&ord, ev.id, &old);
      if (ev.source != MPT_SRC_MARSHAL) continue;
      if (n < UINT32_MAX) idtab_replace(&ord, ev.id, (uint32_t)n, NULL);
      n++;
      size_t words = (size_t)(n + 63) / 64;
      if (words > cap) {
        size_t oc = cap;
        grow_array((void **)&bits, &cap, words, sizeof *bits);
        memset(bits + oc, 0, (cap - oc) * sizeof *bits);
      }
    } else if (ev.kind == MPT_EV_PROMOTE || ev.kind == MPT_EV_COLLECT) {
      uint32_t k;
      if (!idtab_del(&ord, ev.id, &k)) continue;
      if (ev.kind == MPT_EV_PROMOTE) { bits[k / 64] |= 1ULL << (k % 64); any = 1; }
    }
  }
  idtab_free(&ord);
  ti_close(t);
  if (!any) { free(bits); return NULL; }
  return bits;
}

/* Filters: the allocations whose samples pass them, found by a first
   pass of the analysis engine (filters are decided on completed samples).
   Bit k of the result is set when the k-th allocation of the file passes.
   The engine completes a collected sample right after handing over its
   COLLECT event, so the ordinal is taken from the id map there; samples
   still live at the end come with their id.  NULL (with *rc 1) after an
   error. */
typedef struct {
  idtab ord;                   /* live block id -> allocation ordinal */
  uint32_t collected;          /* ordinal of the block just collected */
  uint64_t n, *bits;
  size_t cap;
} kept_set;

static void kept_event(void *u, an_ctx *c, const mpt_event *ev)
{
  (void)c;
  kept_set *k = u;
  if (ev->kind == MPT_EV_ALLOC) {
    uint32_t old;
    if (k->n < UINT32_MAX) idtab_replace(&k->ord, ev->id, (uint32_t)k->n, &old);
    k->n++;
    size_t words = (size_t)(k->n + 63) / 64;
    if (words > k->cap) {
      size_t oc = k->cap;
      grow_array((void **)&k->bits, &k->cap, words, sizeof *k->bits);
      memset(k->bits + oc, 0, (k->cap - oc) * sizeof *k->bits);
    }
  } else if (ev->kind == MPT_EV_COLLECT) {
    k->collected = UINT32_MAX;
    idtab_del(&k->ord, ev->id, &k->collected);
  }
}

static void kept_sample(void *u, an_ctx *c, const an_sample *s)
{
  (void)c;
  kept_set *k = u;
  uint32_t i = k->collected;
  if (s->t_collect == AN_NEVER && !idtab_get(&k->ord, s->id, &i)) return;
  if (i != UINT32_MAX) k->bits[i / 64] |= 1ULL << (i % 64);
}

static uint64_t *kept_allocations(const char *path, const an_filter *f, int *rc)
{
  const char *paths[1] = { path };
  an_ctx *c = an_open(paths, 1, f);
  if (!c) { *rc = 1; return NULL; }
  kept_set k;
  memset(&k, 0, sizeof k);
  idtab_init(&k.ord);
  an_callbacks cb = { &k, kept_event, kept_sample };
  an_quiet_truncation = 1;      /* the export pass warns */
  *rc = an_run(c, &cb);
  an_quiet_truncation = 0;
  if (!*rc) an_print_hints(c);
  an_close(c);
  idtab_free(&k.ord);
  if (*rc) { free(k.bits); return NULL; }
  return k.bits ? k.bits : xcalloc(1, sizeof *k.bits);
}

static const char usage[] =
  "usage: ocaml-memprof ctf [--format-version 2|3] [FILTERS] -o OUT.ctf TRACE\n"
  "Write TRACE as a memtrace CTF file.\n"
  "  --format-version 2  (default) one stream, all domains merged (a domain's\n"
  "                    time moved later where it would go backwards): read by\n"
  "                    released memtrace tools and memtrace_viewer\n"
  "  --format-version 3  one stream per domain (domains and times kept): read\n"
  "                    by memtrace master and memtrace_viewer built on it only\n"
  "Kept: every allocation (length, samples, source, backtrace with inlined\n"
  "frames), promotion and collection.  memtrace cannot represent, so left\n"
  "out: minor/major GC, compaction, heap statistics, domain start/stop,\n"
  "tracing start/stop, fork and lost-sample events, heap snapshots; the\n"
  "OCaml version; version 2: the domain of each event; version 3: the domain\n"
  "that recorded a promotion or collection (written in the allocating\n"
  "domain's stream).  The marshal source becomes minor when the block is\n"
  "promoted later, else major; the command line becomes the context string.\n"
  "Times are rounded down to microseconds.\n"
  "With filters, only the allocations that pass them are written, with their\n"
  "promotions and collections; --hide removes the matching frames from the\n"
  "backtraces.\n";

int cmd_ctf(int argc, char **argv)
{
  const char *out = NULL;
  int version = 2;
  cli_inputs in;
  cli_inputs_init(&in);
  an_filter f;
  an_filter_init(&f);
  int rc = -1;
  for (int i = 1; i < argc && rc < 0; i++) {
    int k = cli_option(&f, &in, 0, argc, argv, &i);
    if (k < 0) rc = 2;
    else if (k) continue;
    else if (cli_is_help(argv[i])) { print_usage(stdout, usage, 1); rc = 0; }
    else if (!strcmp(argv[i], "-o")) { if (!(out = cli_value(argc, argv, &i))) rc = 2; }
    else if (!strcmp(argv[i], "--format-version")) {
      const char *v = cli_value(argc, argv, &i);
      if (!v) rc = 2;
      else if (!strcmp(v, "2") || !strcmp(v, "3")) version = v[0] - '0';
      else rc = cli_bad_value(argv[i - 1], v, "2 or 3");
    }
    else if (argv[i][0] == '-' && argv[i][1]) rc = cli_unknown_option(argv[i], usage, 1);
    else cli_inputs_add(&in, argv[i]);
  }
  if (rc < 0 && !out) rc = cli_usage_error("-o OUT.ctf is required");
  if (rc < 0) {
    rc = cli_inputs_resolve(&in);
    if (rc == 0 && in.npaths > 1)
      rc = cli_usage_error("ctf exports one trace, and %zu are given (select one with --pid)",
                           in.npaths);
    else if (rc == 0) rc = -1;      /* resolved: go on */
  }
  if (rc >= 0) { an_filter_free(&f); cli_inputs_free(&in); return rc; }
  const char *path = in.paths[0];
  uint64_t *kept = NULL;
  an_layer_cache hide_cache = { .f = &f };
  if (an_filter_active(&f) && !(kept = kept_allocations(path, &f, &rc))) {
    an_filter_free(&f);
    cli_inputs_free(&in);
    return rc;
  }
  char err[512];
  ti_trace *t = ti_open(path, err, sizeof err);
  if (!t) { msg("%s\n", err); free(kept); an_filter_free(&f); cli_inputs_free(&in); return 1; }
  const ti_header *h = ti_get_header(t);
  if (h->sampling_rate == 0) {  /* CTF's rate must be positive (memtrace divides by it) */
    msg("%s: a trace of heap snapshots only (memprof_rate=0) has no samples to export\n", path);
    ti_close(t); free(kept); an_filter_free(&f); cli_inputs_free(&in);
    return 1;
  }
  codes k;
  memset(&k, 0, sizeof k);
  k.t = t;
  k.next_synth = (1ULL << 62) - (1ULL << 40);
  u64map_init(&k.code_loc, 1024);
  ctf_winfo wi = {
    h->sampling_rate, h->word_bytes * 8, h->pid, h->start_wall_ns / 1000,
    h->executable, h->hostname, h->runtime_params,
    h->format == TI_FORMAT_CTF ? h->context : h->command_line,
    version, (uint16_t)h->initial_domain
  };
  FILE *o = out_open(out);
  if (!o) {
    u64map_free(&k.code_loc);
    ti_close(t);
    free(kept);
    an_filter_free(&f);
    cli_inputs_free(&in);
    return 1;
  }
  ctf_writer *w = ctf_writer_open(o, &wi, lookup, &k);
  idtab live;
  idtab_init(&live);
  live_rec *pool = NULL;
  size_t npool = 0, pcap = 0;
  uint32_t *freel = NULL;
  size_t nfree = 0, fcap = 0;
  uint64_t *stack = NULL;
  size_t scap = 0;
  uint64_t *marshal_promoted = h->format == TI_FORMAT_MEMPROF ? promoted_marshal(path) : NULL;
  uint64_t marshal_n = 0, nalloc = 0;
  uint64_t unknown = 0, twice = 0, start = wi.start_us;
  mpt_event ev;
  while ((rc = ti_next(t, &ev)) == TI_OK) {
    uint64_t tus = start + ev.time_ns / 1000;
    if (ev.kind == MPT_EV_ALLOC) {
      uint64_t n = nalloc++;
      if (kept && !(n < UINT32_MAX && kept[n / 64] >> (n % 64) & 1)) {
        uint32_t old;           /* filtered out: so are its promotion, collection */
        if (idtab_del(&live, ev.id, &old)) {
          grow_array((void **)&freel, &fcap, nfree + 1, sizeof *freel);
          freel[nfree++] = old;
        }
        if (ev.source == MPT_SRC_MARSHAL) marshal_n++;
        continue;
      }
      grow_array((void **)&stack, &scap, ev.stack_len, sizeof *stack);
      uint32_t len = 0;
      /* from the outer end: whether a frame is hidden depends on its
         caller's (an_hide_next) */
      for (uint32_t i = 0, state = AN_SHOWN; i < ev.stack_len; i++) {
        uint32_t loc = ev.stack[ev.stack_len - 1 - i];
        if (f.nhide) {
          state = (uint32_t)an_hide_next(an_cached_hide_class(&hide_cache, loc, ti_location(t, loc)),
                                         (int)state);
          if (state == AN_GONE) continue;
        }
        stack[len++] = code_for(&k, loc);
      }
      int src = ev.source == MPT_SRC_MINOR ? 0 : ev.source == MPT_SRC_CUSTOM ? 2 : 1;
      if (ev.source == MPT_SRC_MARSHAL) {
        if (marshal_promoted && marshal_n < UINT32_MAX &&
            (marshal_promoted[marshal_n / 64] >> (marshal_n % 64) & 1))
          src = 0;
        marshal_n++;
      }
      uint16_t dom = (uint16_t)ev.stream;
      uint64_t oid = ctf_writer_alloc(w, dom, tus, ev.wosize, ev.nsamples, src, stack, len);
      uint32_t slot, old;
      if (idtab_del(&live, ev.id, &old)) { /* reused id: forget the old block */
        grow_array((void **)&freel, &fcap, nfree + 1, sizeof *freel);
        freel[nfree++] = old;
      }
      if (nfree) slot = freel[--nfree];
      else {
        grow_array((void **)&pool, &pcap, npool + 1, sizeof *pool);
        slot = (uint32_t)npool++;
      }
      pool[slot] = (live_rec){ oid, dom, src == 0, 0 };
      idtab_replace(&live, ev.id, slot, NULL);
    } else if (ev.kind == MPT_EV_PROMOTE) {
      uint32_t slot;
      if (!idtab_get(&live, ev.id, &slot)) { unknown += !kept; continue; }
      if (!pool[slot].minor || pool[slot].promoted) { twice++; continue; }
      pool[slot].promoted = 1;
      ctf_writer_promote(w, pool[slot].domain, tus, pool[slot].out_id);
    } else if (ev.kind == MPT_EV_COLLECT) {
      uint32_t slot;
      if (!idtab_del(&live, ev.id, &slot)) { unknown += !kept; continue; }
      ctf_writer_collect(w, pool[slot].domain, tus, pool[slot].out_id);
      grow_array((void **)&freel, &fcap, nfree + 1, sizeof *freel);
      freel[nfree++] = slot;
    }
  }
  int status = 0;
  if (rc == TI_ERR) {
    msg("malformed trace: %s\n", ti_error(t));
    status = 1;
  } else if (ti_truncated(t)) {
    msg("warning: trace is truncated; exported up to its last complete record\n");
  }
  if (unknown)
    msg("note: %llu promotions/collections of blocks whose allocation"
            " is not in the trace left out\n", (unsigned long long)unknown);
  if (twice)
    msg("note: %llu promotions of blocks not allocated in the minor"
            " heap, or promoted twice, left out (memtrace cannot represent them)\n",
            (unsigned long long)twice);
  free(marshal_promoted);
  if (ctf_writer_close(w) < 0) status = 1;
  if (out_close(o, out)) status = 1;
  free(pool); free(freel); free(stack); free(k.code_of); free(kept);
  an_layer_cache_free(&hide_cache);
  idtab_free(&live);
  u64map_free(&k.code_loc);
  ti_close(t);
  an_filter_free(&f);
  cli_inputs_free(&in);
  return status;
}

/* cmd_retainers.c: `ocaml-memprof retainers`: who keeps the heap alive,
   from the heap snapshots of a trace.

   For one snapshot (the last, or --snapshot N): the dominator tree of the
   snapshot graph (heapgraph.h: super root -> root kinds -> root labels ->
   blocks; dominators.h), hence the retained size of every block and of
   every root kind and root label (what would be freed if that root
   alone were cleared).  Then:
   - tables: retained by root kind, top roots by retained size, top
     allocation sites of the live sampled blocks, each estimated with the
     Horvitz-Thompson estimator: a block of h words (header included) is
     sampled with probability p = 1 - (1 - rate)^h, so sum(h / p) over the
     site's sampled blocks estimates its live words without bias, with
     variance sum((1 - p) h^2 / p^2) (the standard error is printed);
   - --site RE: retainer paths from the roots to the sampled blocks
     of the sites with a frame matching RE (function or file name, as
     the filters' --focus), along the breadth-first (shortest) path tree,
     aggregated by their description (runs of identical steps collapsed),
     shortest first; that tree and the paths' texts are computed once per
     snapshot and shared by every site (path_tree: linear in the
     snapshot, however deep its blocks);
   - --tree: the dominator tree aggregated and pruned (domtree.h): root
     kinds, root labels, then the dominated blocks grouped by tag, size
     class and allocation site, heaviest first (also in --json);
   - --evolution: one line per snapshot of the trace;
   - --diff AFTER: roots and sites whose retained size grew from TRACE's
     last snapshot to AFTER's;
   - --heapsnapshot FILE: the graph in V8's .heapsnapshot format (Chrome
     DevTools' Memory panel, memlab);
   - --json: the tables, each site with its retainer paths, and the
     tree, as one JSON object (write_json); the HTML report embeds one per
     snapshot of each trace, with the evolution (retainers_json).
   When the program's .cmt files are found, blocks are named by the field
   that holds them and their OCaml type (snaptypes.h) in the paths, the
   holders and the tree, and --by type adds the heap by type; else, or
   with --no-types, by tag.
   Module globals are named through the executable's symbol table
   (elf_symbols.h) when the trace's executable is still there; it is read
   once per trace, when a snapshot first has a global root to name, and
   when it cannot be used one warning says why and the globals keep
   their addresses. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "commands.h"
#include "dominators.h"
#include "domtree.h"
#include "elf_symbols.h"
#include "heapgraph.h"
#include "holders.h"
#include "report.h"
#include "snaptypes.h"
#include "util.h"

static const char usage[] =
  "usage: ocaml-memprof retainers [options] TRACE\n"
  "Who keeps the heap alive, from the trace's heap snapshots (taken with\n"
  "OCAMLRUNPARAM=memprof=PATH,memprof_snapshot_at_exit=1, _signal=SIG,\n"
  "_every_s=N, _every_cycles=N, or Gc.Memprof_trace.snapshot ()).\n"
  "Retained size of a root or block: the bytes that would be freed if it\n"
  "alone were gone (dominator tree); the kinds table adds 'weak' (reachable\n"
  "only through weak references) and 'shared' (several kinds reach them,\n"
  "none alone), so it adds up to the live bytes.  Sites are estimated from the\n"
  "sampled blocks (each weighted by 1 / its sampling probability, with\n"
  "the standard error).\n"
  "  --snapshot N        the Nth snapshot of the trace (default: the last)\n"
  "  -n N                rows per table (default 10)\n"
  "  --site RE           retainer paths to the blocks allocated at sites\n"
  "                      whose stack has a frame whose function or file name\n"
  "                      matches RE (POSIX extended regex, as --focus), then\n"
  "                      every root holding them by path shape: the bytes it\n"
  "                      reaches (through), those no other root reaches\n"
  "                      (alone), and those several roots share\n"
  "  --paths N           paths shown with --site (default 5)\n"
  "  --tree              the dominator tree: root kinds, roots, then the blocks\n"
  "                      they retain grouped by tag, size class and allocation\n"
  "                      site, heaviest first, the rest as \"N others\" rows\n"
  "  --depth N           levels of the tree (default 10)\n"
  "  --width N           children shown per node (default 10)\n"
  "  --nodes N           nodes of the tree in all (default 500)\n"
  "  --evolution         one line per snapshot: live, retained by kind, top root\n"
  "  --diff AFTER        growth of roots and sites from TRACE's last snapshot\n"
  "                      to trace AFTER's\n"
  "  --heapsnapshot OUT  write the snapshot to OUT (or --heapsnapshot=OUT) in\n"
  "                      V8's format, for Chrome DevTools (name it\n"
  "                      *.heapsnapshot) or memlab; OUT may not be a trace\n"
  "  --hide RE           leave frames matching RE out of allocation stacks: a\n"
  "                      block's site is the innermost frame left (repeatable)\n"
  "  --preset NAME[,NAME...]   hide a preset's frames (lwt, async, eio, stdlib,\n"
  "                      runtime, or the user's; see ocaml-memprof top --help)\n"
  "  --presets-file F    user presets, one 'name = regex' per line\n"
  "  --by type           also a table of the heap by OCaml type: each type's\n"
  "                      retained and own bytes (types from the program's\n"
  "                      .cmt files, compile with -bin-annot; --json: \"types\")\n"
  "  --cmt-path DIR      also search DIR for .cmt files (repeatable)\n"
  "  --no-types          name blocks by tag, not by type and field, even when\n"
  "                      the program's .cmt files are found\n"
  "  --bytes             sizes in tables as exact byte counts\n"
  "  --json              the tables (and --site's paths) as one JSON object, in\n"
  "                      bytes; each site with its first --paths retainer paths,\n"
  "                      and the tree (--depth, --width, --nodes)\n";

static const char *const kind_names[HG_KINDS] = {
  "global", "stack", "local", "c-global", "finaliser", "thread", "memprof", "weak" };

/* The kinds table's rows: every root kind that has roots or retains
   something, the weak kind when it retains something, and last "shared":
   the blocks that several root kinds reach, which none retains alone (the
   super root dominates them).  So the rows add up to the live bytes. */
#define KIND_SHARED HG_KINDS
typedef struct { uint32_t kind; uint64_t retained; size_t roots; } kind_row;

static size_t kind_rows(const hg_snapshot *s, const uint64_t *retained, uint64_t live,
                        kind_row rows[HG_KINDS + 1])
{
  size_t nroots[HG_KINDS] = { 0 }, n = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < s->nroots; i++) nroots[s->roots[i].kind]++;
  for (uint32_t k = 0; k < HG_KINDS; k++) {
    sum += retained[1 + k];
    if (nroots[k] || retained[1 + k]) rows[n++] = (kind_row){ k, retained[1 + k], nroots[k] };
  }
  rows[n++] = (kind_row){ KIND_SHARED, live > sum ? live - sum : 0, 0 };
  return n;
}

static const char *kind_row_name(uint32_t k) { return k == KIND_SHARED ? "shared" : kind_names[k]; }

/* The executable's module symbols, shared by the snapshots of a trace. */
typedef struct {
  int tried, ok;
  elf_symbols elf;
} exe_symbols;

typedef struct {
  hg_reader *r;
  exe_symbols *exe;
  hg_snapshot s;
  dom_tree dom;
  hd_ctx holders;               /* who holds a site's blocks; weak-only blocks */
  struct path_tree *paths;      /* retainer paths, built on first need */
  uint64_t *retained;           /* per node, bytes (in dom: dom_tree.retained) */
  uint64_t live_bytes, ext_bytes;
  char **label_text;            /* per label node */
  double rate;
  uint64_t *seen;               /* seq, time_ns of every snapshot read */
  size_t nseen, seen_cap;
  uint32_t *site_loc;           /* per allocation of the reader: the
                                   location of its site (site_locations) */
  snap_types *types;            /* OCaml types and field names, or NULL */
  uint32_t *groups;             /* per node: the tree's type groups, made
                                   on first need (tree_groups) */
} analysis;

/* --hide, --preset: frames left out of allocation stacks, so that a
   block's site is the innermost frame left, as in the other commands
   (NULL: none). */
static const an_filter *hiding;
/* Its per-location an_hide_class, and a stack's hidden flags:
   set_hiding makes them anew. */
static an_layer_cache hide_cache;
static uint8_t *stack_hid;
static size_t stack_hid_cap;

static void set_hiding(const an_filter *f)
{
  hiding = f;
  an_layer_cache_free(&hide_cache);
  hide_cache.f = f;
  free(stack_hid);
  stack_hid = NULL;
  stack_hid_cap = 0;
}

/* The frames of allocation [al]'s stack (innermost first) that --hide
   leaves, at most [max], into [locs]; how many (hiding is decided from
   the stack's outer end, an_hide_next). */
static uint32_t visible_frames(const hg_reader *r, const hg_alloc *al, uint32_t *locs, uint32_t max)
{
  uint32_t n = 0, len = al->stack_len;
  const uint32_t *s = r->stacks + al->stack_off;
  if (!hiding || !hiding->nhide) {
    for (; n < len && n < max; n++) locs[n] = s[n];
    return n;
  }
  grow_array((void **)&stack_hid, &stack_hid_cap, len ? len : 1, 1);
  for (uint32_t k = len, state = AN_SHOWN; k-- > 0;) {
    int cls = an_cached_hide_class(&hide_cache, s[k], ti_location(r->t, s[k]));
    state = (uint32_t)an_hide_next(cls, (int)state);
    stack_hid[k] = state == AN_GONE;
  }
  for (uint32_t k = 0; k < len && n < max; k++) if (!stack_hid[k]) locs[n++] = s[k];
  return n;
}

/* ---- names ---- */

static const char *tag_name(unsigned tag, char *buf, size_t n)
{
  switch (tag) {
  case 246: return "lazy";
  case 247: return "closure";
  case 248: return "object";
  case 249: return "infix";
  case 250: return "forward";
  case 251: return "abstract";
  case 252: return "string";
  case 253: return "float";
  case 254: return "float array";
  case 255: return "custom";
  case 245: return "continuation";
  default: snprintf(buf, n, "block tag %u", tag); return buf;
  }
}

static void loc_text(hg_reader *r, uint32_t loc, char *buf, size_t n)
{
  const mpt_location *l = ti_location(r->t, loc);
  if (l && l->n > 0)
    snprintf(buf, n, "%s (%s:%u)", l->entries[0].function, l->entries[0].file,
             l->entries[0].line);
  else snprintf(buf, n, "?");
}

/* Per allocation read so far: the location of its innermost frame that
   --hide does not remove, 0 when there is none. */
static uint32_t *site_locations(hg_reader *r)
{
  uint32_t *site = xcalloc(r->nallocs ? r->nallocs : 1, sizeof *site);
  for (size_t i = 0; i < r->nallocs; i++) visible_frames(r, &r->allocs[i], &site[i], 1);
  return site;
}

/* The location naming an allocation's site, 0 for none. */
static uint32_t site_of(const analysis *a, uint32_t alloc)
{
  const hg_alloc *al = &a->r->allocs[alloc - 1];
  if (a->site_loc) return a->site_loc[alloc - 1];
  return al->stack_len ? a->r->stacks[al->stack_off] : 0;
}

/* The allocation site of a block's alloc record: its innermost frame
   (that --hide leaves). */
static void site_text(const analysis *a, uint32_t alloc, char *buf, size_t n)
{
  uint32_t loc = site_of(a, alloc);
  if (!loc) { snprintf(buf, n, "(no stack)"); return; }
  loc_text(a->r, loc, buf, n);
}

/* The function of an allocation's site, "" for none. */
static const char *site_function(const analysis *a, uint32_t alloc)
{
  uint32_t loc = site_of(a, alloc);
  const mpt_location *l = loc ? ti_location(a->r->t, loc) : NULL;
  return l && l->n ? l->entries[0].function : "";
}

/* Does a frame of the allocation's stack, inlined ones included, have a
   function or file name matching [re]? */
static int stack_matches(hg_reader *r, uint32_t alloc, const regex_t *re)
{
  const hg_alloc *a = &r->allocs[alloc - 1];
  for (uint32_t i = 0; i < a->stack_len; i++)
    if (an_location_matches(ti_location(r->t, r->stacks[a->stack_off + i]), re)) return 1;
  return 0;
}

/* Has [a]'s snapshot a global root labelled by its address? */
static int has_global_address(const analysis *a)
{
  for (uint32_t l = 0; l < a->s.nlabels; l++) {
    const char *raw = strpool_get(a->r->strs, a->s.label_str[l]);
    if (a->s.label_kind[l] == MPT_ROOT_GLOBAL && raw[0] == '0' && raw[1] == 'x') return 1;
  }
  return 0;
}

/* The executable's symbols when they can name [a]'s globals, read on
   first need (a warning if they cannot be read), or NULL. */
static const elf_symbols *exe_symbols_for(analysis *a)
{
  exe_symbols *x = a->exe;
  if (!x || !a->s.anchor || !has_global_address(a)) return NULL;
  if (!x->tried) {
    const char *exe = ti_get_header(a->r->t)->executable;
    char why[128];
    x->tried = 1;
    x->ok = elf_symbols_load(&x->elf, exe, why, sizeof why) == 0;
    if (!x->ok) {
      msg("warning: module roots shown as addresses: executable '");
      cli_put_safe(stderr, exe);
      fprintf(stderr, "' named by the trace: %s\n", why);
    }
  }
  return x->ok ? &x->elf : NULL;
}

static void exe_symbols_free(exe_symbols *x)
{
  if (x->ok) elf_symbols_free(&x->elf);
  memset(x, 0, sizeof *x);
}

static void name_labels(analysis *a)
{
  hg_snapshot *s = &a->s;
  const elf_symbols *elf = exe_symbols_for(a);
  a->label_text = xcalloc(s->nlabels ? s->nlabels : 1, sizeof *a->label_text);
  for (uint32_t l = 0; l < s->nlabels; l++) {
    const char *raw = strpool_get(a->r->strs, s->label_str[l]);
    char buf[512];
    if (s->label_kind[l] == MPT_ROOT_GLOBAL && elf && raw[0] == '0' && raw[1] == 'x'
        && elf_symbols_module(elf, s->anchor, strtoull(raw, NULL, 16), buf, sizeof buf))
      a->label_text[l] = xstrdup(buf);
    else
      a->label_text[l] = xstrdup(raw);
  }
}

/* Sizes for people ("1.23 MB"), or exact byte counts with --bytes. */
static int exact_bytes;
static const char *size_text(double b, char *buf, size_t n)
{
  if (!exact_bytes) return human_bytes(b, buf, n);
  snprintf(buf, n, "%.0f", b);
  return buf;
}

/* ---- analysis ---- */

static int analyse(analysis *a)
{
  hg_snapshot *s = &a->s;
  for (uint32_t b = 1; b <= s->nblocks; b++) a->live_bytes += hg_block_bytes(s, b);
  a->ext_bytes = s->ext_total;
  if (dom_compute(s->n, s->off, s->adj, &a->dom) != 0) {
    msg("out of memory computing dominators (%u nodes)\n", s->n);
    return -1;
  }
  /* The retained sizes, in the room dom_compute leaves (its peak of
     memory is the command's), start as the own sizes. */
  a->retained = a->dom.retained;
  memset(a->retained, 0, (size_t)s->base * sizeof *a->retained);
  for (uint32_t b = 1; b <= s->nblocks; b++) a->retained[s->base + b - 1] = hg_block_bytes(s, b);
  dom_retained(&a->dom, a->retained);
  hd_init(&a->holders, s, &a->dom);
  name_labels(a);
  if (hiding && hiding->nhide) a->site_loc = site_locations(a->r);
  return 0;
}

static void paths_release(analysis *a);

static void analysis_free(analysis *a)
{
  for (uint32_t l = 0; l < a->s.nlabels; l++) free(a->label_text[l]);
  free(a->label_text);
  free(a->seen);
  free(a->site_loc);
  st_free(a->types);
  free(a->groups);
  hd_free(&a->holders);
  paths_release(a);
  dom_free(&a->dom);
  hg_snapshot_free(&a->s);
}

/* ---- sites ---- */

typedef struct {
  char *name;
  double est, var;              /* bytes */
  uint64_t sampled;
  uint32_t alloc;               /* one of its allocations (for its frames),
                                   0 for the weak row */
} site_row;

/* The sites table's row of the sampled blocks reachable only through weak
   references, whatever their site: they are live but no root retains
   them, so they are not counted in their sites' rows. */
static const char weak_row_name[] = "(reachable only through weak references)";

/* Horvitz-Thompson weight of a sampled block: its bytes / the probability
   that it was sampled, and the variance term of that estimate. */
static double block_estimate(const analysis *a, uint32_t b, double *var)
{
  double h = (double)(hg_wosize(&a->s, b) + 1), bytes = 8 * h;
  double p = a->rate > 0 ? -expm1(h * log1p(-a->rate)) : 1;
  if (!(p > 0)) p = 1;
  if (var) *var = (1 - p) * bytes * bytes / (p * p);
  return bytes / p;
}

typedef struct { site_row *rows; size_t n, cap; strpool *keys; } site_table;

static int by_est(const void *x, const void *y)
{
  const site_row *a = x, *b = y;
  return a->est < b->est ? 1 : a->est > b->est ? -1 : 0;
}

/* The snapshot's sampled blocks by allocation site, largest estimate
   first. */
static void sites_collect(analysis *a, site_table *t)
{
  hg_snapshot *s = &a->s;
  t->keys = strpool_new();
  for (uint32_t b = 1; b <= s->nblocks; b++) {
    uint32_t al = s->alloc[b - 1];
    if (!al) continue;
    int weak = hd_weak_only(&a->holders, b);
    char buf[1024];
    if (weak) snprintf(buf, sizeof buf, "%s", weak_row_name);
    else site_text(a, al, buf, sizeof buf);
    uint32_t k = strpool_intern(t->keys, buf, strlen(buf));
    if (k >= t->n) {
      grow_array((void **)&t->rows, &t->cap, k + 1, sizeof *t->rows);
      memset(t->rows + t->n, 0, (k + 1 - t->n) * sizeof *t->rows);
      t->n = k + 1;
      t->rows[k].name = (char *)strpool_get(t->keys, k);
      t->rows[k].alloc = weak ? 0 : al;
    }
    double var, est = block_estimate(a, b, &var);
    site_row *r = &t->rows[k];
    r->est += est;
    r->var += var;
    r->sampled++;
  }
  if (t->n) qsort(t->rows, t->n, sizeof *t->rows, by_est);
}

/* ---- reports ---- */

typedef struct { uint32_t node; uint64_t ret; } ranked;
static int by_ret(const void *x, const void *y)
{
  const ranked *a = x, *b = y;
  return a->ret < b->ret ? 1 : a->ret > b->ret ? -1 : (a->node > b->node) - (a->node < b->node);
}

/* The snapshot's roots (labels), largest retained size first; the
   caller frees the array. */
static ranked *roots_ranked(analysis *a)
{
  hg_snapshot *s = &a->s;
  ranked *r = xmalloc((s->nlabels ? s->nlabels : 1) * sizeof *r);
  for (uint32_t l = 0; l < s->nlabels; l++) r[l] = (ranked){ l, a->retained[1 + HG_KINDS + l] };
  if (s->nlabels) qsort(r, s->nlabels, sizeof *r, by_ret);
  return r;
}

static void print_header(analysis *a)
{
  hg_snapshot *s = &a->s;
  char b1[32], b2[32];
  printf("heap snapshot %llu at %.3f s: %u blocks, %llu edges (%llu weak), "
         "live %s", (unsigned long long)s->seq, s->time_ns / 1e9, s->nblocks,
         (unsigned long long)s->nedges_file, (unsigned long long)s->nweak,
         human_bytes((double)a->live_bytes, b1, sizeof b1));
  if (a->ext_bytes) printf(" + %s outside the heap", human_bytes((double)a->ext_bytes, b2, sizeof b2));
  if (s->complete) printf(", pause %.1f ms", s->pause_ns / 1e6);
  else printf(" (cut short: the trace ends inside this snapshot)");
  if (s->walk_mode == MPT_WALK_FORK)
    printf(", walked in a forked child in %.1f ms (extra memory %s)",
           s->walk_ns / 1e6, human_bytes((double)s->walk_extra_bytes, b2, sizeof b2));
  putchar('\n');
  if (s->end_flags & MPT_SNAP_INCOMPLETE)
    printf("warning: the runtime ran out of memory during this snapshot: blocks are missing\n");
}

static void print_kinds(analysis *a)
{
  char b1[32];
  kind_row rows[HG_KINDS + 1];
  size_t n = kind_rows(&a->s, a->retained, a->live_bytes, rows);
  printf("\nRetained by root kind (adds up to the live bytes)\n  %-10s %12s %7s %7s\n",
         "kind", "retained", "%", "roots");
  for (size_t i = 0; i < n; i++) {
    printf("  %-10s %12s %6.1f%% %7zu", kind_row_name(rows[i].kind),
           size_text((double)rows[i].retained, b1, sizeof b1),
           a->live_bytes ? 100.0 * (double)rows[i].retained / (double)a->live_bytes : 0,
           rows[i].roots);
    if (rows[i].kind == HG_KIND_WEAK) fputs("  reachable only through weak references", stdout);
    if (rows[i].kind == KIND_SHARED) fputs("  shared by several root kinds, retained by none alone", stdout);
    putchar('\n');
  }
  int memprof_roots = 0;
  for (size_t i = 0; i < n; i++) memprof_roots |= rows[i].kind == MPT_ROOT_MEMPROF && rows[i].roots;
  if (memprof_roots)
    printf("  (memprof: Gc.Memprof's tracker data; it retains only what no root of\n"
           "   the program reaches)\n");
  if (a->retained[1 + HG_KIND_WEAK])
    printf("  (weak: blocks that only Weak arrays' fields or ephemerons' keys point\n"
           "   to, not cleared yet: collectable, a coming major cycle frees them\n"
           "   unless a strong reference to them is made again, as Weak.get does)\n");
}

static void print_roots(analysis *a, size_t top)
{
  hg_snapshot *s = &a->s;
  ranked *r = roots_ranked(a);
  char b1[32];
  printf("\nTop roots by retained size\n  %12s %7s  %-10s %s\n", "retained", "%", "kind", "root");
  for (size_t i = 0; i < s->nlabels && i < top; i++) {
    uint32_t l = r[i].node;
    printf("  %12s %6.1f%%  %-10s ", size_text((double)r[i].ret, b1, sizeof b1),
           a->live_bytes ? 100.0 * (double)r[i].ret / (double)a->live_bytes : 0,
           kind_names[s->label_kind[l]]);
    cli_put_safe(stdout, a->label_text[l]);
    putchar('\n');
  }
  free(r);
}

static void print_sites(analysis *a, size_t top)
{
  site_table t = { 0 };
  sites_collect(a, &t);
  char b1[32], b2[32];
  printf("\nLive sampled blocks by allocation site (estimated)\n"
         "  %12s %10s %8s  %s\n", "live", "+-se", "sampled", "site");
  if (t.n == 0) printf("  (no sampled block is live: sample with memprof_rate)\n");
  for (size_t i = 0; i < t.n && i < top; i++) {
    site_row *r = &t.rows[i];
    printf("  %12s %10s %8llu  ", size_text(r->est, b1, sizeof b1),
           size_text(sqrt(r->var), b2, sizeof b2), (unsigned long long)r->sampled);
    cli_put_safe(stdout, r->name);
    putchar('\n');
  }
  free(t.rows);
  strpool_free(t.keys);
}

/* ---- by type ---- */

static void print_types(analysis *a, size_t top)
{
  st_type_row *rows;
  size_t n = st_by_type(a->types, &a->s, a->dom.idom, a->retained, &rows);
  char b1[32], b2[32];
  printf("\nHeap by OCaml type (retained: freed if all its values were gone; own: their\n"
         "blocks' bytes)\n  %12s %7s %12s %9s  %s\n", "retained", "%", "own", "blocks", "type");
  for (size_t i = 0; i < n && i < top; i++) {
    printf("  %12s %6.1f%% %12s %9llu  ", size_text((double)rows[i].retained, b1, sizeof b1),
           a->live_bytes ? 100.0 * (double)rows[i].retained / (double)a->live_bytes : 0,
           size_text((double)rows[i].self, b2, sizeof b2), (unsigned long long)rows[i].count);
    cli_put_safe(stdout, rows[i].type ? st_type_text(a->types, rows[i].type) : "(unknown)");
    putchar('\n');
  }
  free(rows);
}

static void json_types(FILE *o, analysis *a, size_t top, json_writer str)
{
  st_type_row *rows;
  size_t n = st_by_type(a->types, &a->s, a->dom.idom, a->retained, &rows);
  fputs(",\n\"types\":[", o);
  for (size_t i = 0; i < n && i < top; i++) {
    fprintf(o, "%s{\"type\":", i ? "," : "");
    str(o, rows[i].type ? st_type_text(a->types, rows[i].type) : "(unknown)");
    fprintf(o, ",\"retained\":%llu,\"self\":%llu,\"blocks\":%llu}",
            (unsigned long long)rows[i].retained, (unsigned long long)rows[i].self,
            (unsigned long long)rows[i].count);
  }
  fputc(']', o);
  free(rows);
}

/* ---- retainer paths ---- */

#define PATH_STEP_TEXT 900

/* Block node [v] as its field name and type ("Leak.state : Leak.cache",
   array elements by index with [with_index]) when known, else by its
   tag. */
static void block_text(const analysis *a, uint32_t v, int with_index, char *buf, size_t n)
{
  char tb[32], name[512];
  uint32_t ty = a->types ? st_type(a->types, v) : 0;
  int named = a->types && st_name_text(a->types, v, with_index, name, sizeof name);
  const char *what = ty ? st_type_text(a->types, ty)
                        : tag_name(a->s.tag[v - a->s.base], tb, sizeof tb);
  snprintf(buf, n, "%s%s%s", named ? name : "", named ? " : " : "", what);
}

static void node_text(analysis *a, uint32_t v, char *buf, size_t n)
{
  hg_snapshot *s = &a->s;
  if (v == 1 + HG_KIND_WEAK) snprintf(buf, n, "weak references only");
  else if (v >= 1 && v <= HG_KINDS) snprintf(buf, n, "%s", kind_names[v - 1]);
  else if (v < s->base) {
    uint32_t l = v - 1 - HG_KINDS;
    snprintf(buf, n, "%s %s", kind_names[s->label_kind[l]], a->label_text[l]);
  } else {
    uint32_t b = v - s->base + 1;
    char what[PATH_STEP_TEXT];
    block_text(a, v, 1, what, sizeof what);
    int len = snprintf(buf, n, "%s (%llu words)", what, (unsigned long long)hg_wosize(s, b));
    if (s->alloc[b - 1] && len > 0 && (size_t)len < n) {
      char site[512];
      site_text(a, s->alloc[b - 1], site, sizeof site);
      snprintf(buf + len, n - (size_t)len, " from %s", site);
    }
  }
}

typedef struct { uint32_t key; uint64_t count, bytes; uint32_t len; } path_row;
static int by_len(const void *x, const void *y)
{
  const path_row *a = x, *b = y;
  if (a->len != b->len) return a->len < b->len ? -1 : 1;
  return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
}

/* Retainer paths, read from one breadth-first tree of shortest paths from
   the super root, built once per snapshot on first need and shared by all
   the sites and the --site query (path_tree).

   A block's path text is the steps of its tree path from the root label
   down (the kind nodes left out, but for the weak one), one line each, a
   run of identical steps written once with " (repeated)" (" (repeated 10+
   times)" for 10 or more), the block's own step never folded into a run,
   and the text cut before a step that would take it past PATH_KEY_CAP
   bytes.  Walking every block's path to the root costs the depth of the
   tree per block: quadratic for the sampled cells of a long list, each
   path as long as the list before it.  Instead a path is a state of an
   automaton read down the tree: the state of a node is a function of its
   parent's state and its own step text, so it is computed once per node
   (memoized in state[], only for the ancestors of the blocks asked about)
   and the transitions are interned (state, text) -> state, so that two
   blocks have the same path text exactly when their final states are the
   same.  A state is the last step written (its text, the number of steps,
   the length of the text so far) with the length of the current run
   (capped at 9, all " (repeated 10+ times)" needs), or the cut.  The text
   is written out only for the paths printed.  So all the paths of a
   snapshot cost a breadth-first search plus a step text per node on the
   way: linear in the snapshot. */
#define PATH_KEY_CAP (1 << 16)
#define PATH_STEP_MAX 1024      /* a step's text, with its NUL */
#define PATH_RUN_MAX 9
#define PATH_CUT UINT32_MAX     /* the text of a cut state */
#define PATH_NO_TEXT (UINT32_MAX - 1)   /* the text of the empty path */

typedef struct {
  uint32_t prev;                /* written step: the state it follows; run:
                                   its step's state; cut: the state cut */
  uint32_t text;                /* its step's text (texts), PATH_CUT for a cut */
  uint32_t steps, len;          /* steps and bytes of its text (before
                                   any run mark) */
  uint32_t run;                 /* identical steps folded into the last */
} path_state;

typedef struct path_tree {
  uint32_t *parent;             /* per node: breadth-first tree parent,
                                   DOM_NONE for the unreachable */
  uint32_t *state;              /* per node: 1 + its state, 0 if not yet
                                   computed */
  path_state *v;                /* v[0]: the empty path at the super root */
  size_t n, cap;
  u64map next;                  /* state << 32 | text -> next state; with
                                   bit 31 of text, a block's last step */
  strpool *texts;
  u64map text_of;               /* step_key -> text */
} path_tree;

#define PATH_LAST_STEP 0x80000000u

/* What a step folding [run] identical steps after it is marked with. */
static const char *run_mark(uint32_t run)
{ return run == 0 ? "" : run < PATH_RUN_MAX ? " (repeated)" : " (repeated 10+ times)"; }

static uint32_t run_mark_len(uint32_t run) { return (uint32_t)strlen(run_mark(run)); }

static uint32_t path_state_new(path_tree *t, path_state st)
{
  grow_array((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v);
  t->v[t->n] = st;
  return (uint32_t)t->n++;
}

/* The state after state [from] reads step text [text]; [last]: the block's
   own step, never folded into a run. */
static uint32_t path_next(path_tree *t, uint32_t from, uint32_t text, int last)
{
  path_state f = t->v[from];
  if (f.text == PATH_CUT) return from;
  int same = f.text == text;
  if (same && !last && f.run == PATH_RUN_MAX) return from;
  /* Runs of 1 to 8 more steps are written alike: what follows them
     follows the run of 1. */
  if (!(same && !last) && f.run && f.run < PATH_RUN_MAX) {
    from = *u64map_get(&t->next, (uint64_t)f.prev << 32 | f.text);
    f = t->v[from];
  }
  uint32_t len = f.len + run_mark_len(f.run);
  int cut = !(same && !last) && len + 2100 >= PATH_KEY_CAP;
  /* A cut is one state whatever the step it cut. */
  uint64_t key = (uint64_t)from << 32
                 | (cut ? PATH_CUT : text | (same && last ? PATH_LAST_STEP : 0));
  uint32_t *known = u64map_get(&t->next, key);
  if (known) return *known;
  path_state to;
  if (same && !last)
    to = (path_state){ f.run ? f.prev : from, text, f.steps, f.len, f.run + 1 };
  else if (cut)
    to = (path_state){ from, PATH_CUT, f.steps, len, 0 };
  else
    to = (path_state){ from, text, f.steps + 1,
                       len + (f.steps ? 1 : 0) + (uint32_t)strlen(strpool_get(t->texts, text)), 0 };
  uint32_t id = path_state_new(t, to);
  u64map_put(&t->next, key, id);
  return id;
}

/* Two states with the same text: a cut right after a step and that
   step. */
static uint32_t path_row_state(const path_tree *t, uint32_t st)
{
  const path_state *p = &t->v[st];
  return p->text == PATH_CUT && t->v[p->prev].run == 0 ? p->prev : st;
}

/* The text of state [st] (steps separated by newlines); free it. */
static char *path_text(const path_tree *t, uint32_t st)
{
  const path_state *p = &t->v[st];
  size_t len = p->len;
  char *out = xmalloc(len + 1);
  out[len] = 0;
  /* Written from the end: each written step is preceded by its
     predecessor's text and run mark. */
  size_t end = len;
  uint32_t x = st;
  if (p->text == PATH_CUT) {
    const path_state *c = &t->v[p->prev];
    uint32_t m = run_mark_len(c->run);
    end -= m;
    memcpy(out + end, run_mark(c->run), m);
    x = p->prev;
  }
  while (x != 0) {
    const path_state *q = &t->v[x];
    if (q->run) { x = q->prev; continue; }
    const char *text = strpool_get(t->texts, q->text);
    size_t tl = strlen(text);
    end -= tl;
    memcpy(out + end, text, tl);
    const path_state *f = &t->v[q->prev];
    if (f->steps) out[--end] = '\n';
    uint32_t m = run_mark_len(f->run);
    end -= m;
    memcpy(out + end, run_mark(f->run), m);
    x = q->prev;
  }
  return out;
}

static void node_text(analysis *a, uint32_t v, char *buf, size_t n);

static void path_tree_build(analysis *a, path_tree *t)
{
  const hg_snapshot *s = &a->s;
  size_t n = s->n ? s->n : 1;
  t->parent = xmalloc(n * sizeof *t->parent);
  uint32_t *queue = xmalloc(n * sizeof *queue);
  for (uint32_t v = 0; v < s->n; v++) t->parent[v] = DOM_NONE;
  size_t qh = 0, qt = 0;
  if (s->n) { t->parent[0] = 0; queue[qt++] = 0; }
  while (qh < qt) {
    uint32_t v = queue[qh++];
    for (uint64_t k = s->off[v]; k < s->off[v + 1]; k++)
      if (t->parent[s->adj[k]] == DOM_NONE) { t->parent[s->adj[k]] = v; queue[qt++] = s->adj[k]; }
  }
  free(queue);
  t->state = xcalloc(n, sizeof *t->state);
  t->texts = strpool_new();
  u64map_init(&t->next, 256);
  u64map_init(&t->text_of, 256);
  path_state_new(t, (path_state){ 0, PATH_NO_TEXT, 0, 0, 0 });
  t->state[0] = 1;
}

static void path_tree_free(path_tree *t)
{
  free(t->parent); free(t->state); free(t->v);
  if (t->texts) { u64map_free(&t->next); u64map_free(&t->text_of); strpool_free(t->texts); }
  memset(t, 0, sizeof *t);
}

static uint64_t holder_step_key(void *u, uint32_t node);

static void node_text_of(void *u, uint32_t v, char *buf, size_t n)
{
  node_text(u, v, buf, n);
}

/* node_text of a block that is not sampled (no site named) and not an
   array element of known index is holder_step_text's: the same key. */
static uint32_t step_text_id(analysis *a, path_tree *t, uint32_t v)
{
  uint64_t key = v >= a->s.base && !a->s.alloc[v - a->s.base]
                 && !(a->types && st_name_indexed(a->types, v))
                 ? holder_step_key(a, v) : HD_NO_KEY;
  return hd_text_id(t->texts, &t->text_of, key, node_text_of, a, v,
                    PATH_STEP_MAX);
}

/* The state of reachable node [v] as a step of longer paths: its
   ancestors' states first, from the nearest known one down. */
static uint32_t path_state_of(analysis *a, path_tree *t, uint32_t v, uint32_t **stack, size_t *cap)
{
  size_t depth = 0;
  for (uint32_t x = v; !t->state[x]; x = t->parent[x]) {
    grow_array((void **)stack, cap, depth + 1, sizeof **stack);
    (*stack)[depth++] = x;
  }
  while (depth-- > 0) {
    uint32_t x = (*stack)[depth], from = t->state[t->parent[x]] - 1;
    int kind = x >= 1 && x <= HG_KINDS && x != 1 + HG_KIND_WEAK;
    t->state[x] = 1 + (kind ? from : path_next(t, from, step_text_id(a, t, x), 0));
  }
  return t->state[v] - 1;
}

/* The snapshot's path tree, built on first need. */
static path_tree *paths_of(analysis *a)
{
  if (!a->paths) {
    a->paths = xcalloc(1, sizeof *a->paths);
    path_tree_build(a, a->paths);
  }
  return a->paths;
}

/* Free the path tree once the paths are written: the holders' searches
   need as much memory again. */
static void paths_release(analysis *a)
{
  if (a->paths) path_tree_free(a->paths);
  free(a->paths);
  a->paths = NULL;
}

/* The retainer paths of the sampled blocks whose allocation [match]es,
   aggregated by their text, shortest first; a row's key is its final
   state in the path tree. */
typedef int path_match(analysis *a, uint32_t block, uint32_t alloc, const void *arg);
typedef struct { path_row *rows; size_t nrows, matched; } path_set;

static void collect_paths(analysis *a, path_match *match, const void *arg, path_set *ps)
{
  hg_snapshot *s = &a->s;
  path_tree *t = paths_of(a);
  size_t cap = 0, stack_cap = 0;
  uint32_t *stack = NULL;
  u64map row_of;                /* final state -> row */
  u64map_init(&row_of, 64);
  memset(ps, 0, sizeof *ps);
  for (uint32_t b = 1; b <= s->nblocks; b++) {
    uint32_t al = s->alloc[b - 1];
    uint32_t v = s->base + b - 1;
    if (!al || t->parent[v] == DOM_NONE || !match(a, b, al, arg)) continue;
    ps->matched++;
    uint32_t from = path_state_of(a, t, t->parent[v], &stack, &stack_cap);
    uint32_t st = path_row_state(t, path_next(t, from, step_text_id(a, t, v), 1));
    uint32_t *k = u64map_get(&row_of, st);
    if (!k) {
      grow_array((void **)&ps->rows, &cap, ps->nrows + 1, sizeof *ps->rows);
      ps->rows[ps->nrows] = (path_row){ st, 0, 0, t->v[st].steps };
      u64map_put(&row_of, st, (uint32_t)ps->nrows++);
      k = u64map_get(&row_of, st);
    }
    ps->rows[*k].count++;
    ps->rows[*k].bytes += hg_block_bytes(s, b);
  }
  if (ps->nrows) qsort(ps->rows, ps->nrows, sizeof *ps->rows, by_len);
  u64map_free(&row_of);
  free(stack);
}

static void path_set_free(path_set *ps) { free(ps->rows); }

/* --site RE: the pattern as given (for messages and JSON) and compiled. */
typedef struct { const char *text; regex_t re; } site_query;

static int match_pattern(analysis *a, uint32_t block, uint32_t alloc, const void *query)
{
  (void)block;
  return stack_matches(a->r, alloc, &((const site_query *)query)->re);
}

/* When no live sampled block matches --site: one line on stderr saying
   whether allocations matched at all (then none of their blocks is
   reachable in this snapshot), else naming the sites closest to the
   pattern, so that a typo or a too narrow regex is seen at once. */
static void site_hint(analysis *a, const site_query *q)
{
  hg_reader *r = a->r;
  size_t matching = 0;
  for (size_t i = 1; i <= r->nallocs; i++) matching += stack_matches(r, (uint32_t)i, &q->re);
  if (matching) {
    msg("note: %zu sampled allocation%s match%s --site '%s', but no block of %s is reachable "
        "in snapshot %llu\n", matching, matching > 1 ? "s" : "", matching > 1 ? "" : "es",
        q->text, matching > 1 ? "them" : "it", (unsigned long long)a->s.seq);
    return;
  }
  /* Distinct function names of the allocation sites (innermost frames). */
  strpool *names = strpool_new();
  for (size_t i = 0; i < r->nallocs; i++) {
    const hg_alloc *al = &r->allocs[i];
    const mpt_location *l = al->stack_len ? ti_location(r->t, r->stacks[al->stack_off]) : NULL;
    if (l && l->n && l->entries[0].function)
      strpool_intern(names, l->entries[0].function, strlen(l->entries[0].function));
  }
  uint32_t n = strpool_count(names);
  const char **cands = xmalloc((n ? n : 1) * sizeof *cands);
  for (uint32_t i = 0; i < n; i++) cands[i] = strpool_get(names, i);
  size_t close[3], nclose = cli_closest(q->text, cands, n, close, 3);
  fprintf(stderr, "ocaml-memprof %s: note: no frame of a sampled allocation matches --site '",
          msg_cmd);
  cli_put_safe(stderr, q->text);
  fputs("'", stderr);
  for (size_t i = 0; i < nclose; i++) {
    fputs(i ? ", " : "; closest sites: ", stderr);
    cli_put_safe(stderr, cands[close[i]]);
  }
  fputs(" (`ocaml-memprof top` lists the sites)\n", stderr);
  free(cands);
  strpool_free(names);
}

static void print_paths(analysis *a, const site_query *q, size_t npaths)
{
  path_set ps;
  collect_paths(a, match_pattern, q, &ps);
  printf("\nRetainer paths to the sampled blocks of sites matching \"");
  cli_put_safe(stdout, q->text);
  printf("\" (%zu blocks, %zu distinct paths, shortest first)\n", ps.matched, ps.nrows);
  if (!ps.matched) site_hint(a, q);
  for (size_t i = 0; i < ps.nrows && i < npaths; i++) {
    printf("  %llu sampled blocks, path of %u steps:\n", (unsigned long long)ps.rows[i].count,
           ps.rows[i].len);
    /* One step per line; each step printed safely (labels come from the trace). */
    char *text = path_text(a->paths, ps.rows[i].key);
    int first = 1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
      fputs(first ? "    " : "    -> ", stdout);
      cli_put_safe(stdout, line);
      putchar('\n');
      first = 0;
    }
    free(text);
  }
  path_set_free(&ps);
  paths_release(a);
}

/* ---- holders: every root holding a site's blocks ---- */

#define MAX_SHAPE_STEPS 64

static int step_repeated(const hd_result *r, const hd_holder *h, uint32_t step)
{
  uint32_t d = r->steps[step].depth;
  return (h->repeated >> (d < 63 ? d : 63)) & 1;
}

/* A step of a holder's path shape: a root, or a block by tag (or field
   and type, array elements without their index) and size (not by site:
   the sampled cells of a list would cut it into shapes). */
static void holder_step_text(void *u, uint32_t node, char *buf, size_t n)
{
  analysis *a = u;
  char what[PATH_STEP_TEXT];
  if (node < a->s.base) { node_text(a, node, buf, n); return; }
  block_text(a, node, 0, what, sizeof what);
  snprintf(buf, n, "%s (%llu words)", what,
           (unsigned long long)hg_wosize(&a->s, node - a->s.base + 1));
}

static const uint32_t *tree_groups(analysis *a);

/* holder_step_text's text is a function of a block's type group (its
   type and field name, st_groups), tag and size: their key. */
static uint64_t holder_step_key(void *u, uint32_t node)
{
  analysis *a = u;
  if (node < a->s.base) return HD_NO_KEY;
  const uint32_t *groups = tree_groups(a);
  uint64_t group = groups ? groups[node] : 0;
  uint64_t wosize = hg_wosize(&a->s, node - a->s.base + 1);
  if (group >= 1u << 23 || wosize > UINT32_MAX) return HD_NO_KEY;
  return group << 40 | (uint64_t)a->s.tag[node - a->s.base] << 32 | wosize;
}

/* The holders (holders.h) of the sampled blocks that [match], weighted
   by their estimated bytes, classed by their site's location. */
static void find_holders(analysis *a, path_match *match, const void *arg, hd_result *r)
{
  hg_snapshot *s = &a->s;
  uint32_t *blocks = NULL, *class = NULL;
  double *weight = NULL;
  size_t n = 0, cap = 0, ccap = 0, wcap = 0;
  for (uint32_t b = 1; b <= s->nblocks; b++) {
    uint32_t al = s->alloc[b - 1];
    if (!al || !match(a, b, al, arg)) continue;
    grow_array((void **)&blocks, &cap, n + 1, sizeof *blocks);
    grow_array((void **)&class, &ccap, n + 1, sizeof *class);
    grow_array((void **)&weight, &wcap, n + 1, sizeof *weight);
    blocks[n] = b;
    class[n] = al;
    weight[n++] = block_estimate(a, b, NULL);
  }
  /* One class per site, not per allocation: the first allocation seen
     of each site's location stands for it. */
  u64map first;
  u64map_init(&first, 64);
  for (size_t i = 0; i < n; i++) {
    uint32_t loc = site_of(a, class[i]), *f = u64map_get(&first, loc);
    if (f) class[i] = *f;
    else u64map_put(&first, loc, class[i]);
  }
  u64map_free(&first);
  hd_namer namer = { holder_step_text, holder_step_key, a };
  hd_find(&a->holders, blocks, weight, class, n, &namer, r);
  free(blocks); free(class); free(weight);
}

/* A holder's path, one string per step, root first; the last names the
   blocks' site. */
static size_t holder_steps(analysis *a, const hd_result *r, const hd_holder *h,
                           char steps[][1200], size_t max)
{
  uint32_t ids[MAX_SHAPE_STEPS];
  size_t ns = hd_shape_steps(r, h->shape, ids, max < MAX_SHAPE_STEPS ? max : MAX_SHAPE_STEPS);
  for (size_t k = 0; k < ns; k++) {
    int len = snprintf(steps[k], 1200, "%s%s", strpool_get(r->texts, r->steps[ids[k]].text),
                       step_repeated(r, h, ids[k]) ? " (repeated)" : "");
    if (k + 1 == ns && h->root != ids[k] && len > 0 && len < 1200) {
      char site[512];
      site_text(a, h->class, site, sizeof site);
      snprintf(steps[k] + len, (size_t)(1200 - len), " from %s", site);
    }
  }
  return ns;
}

static void print_holders(analysis *a, const site_query *q)
{
  hd_result r;
  find_holders(a, match_pattern, q, &r);
  char b1[32], b2[32];
  printf("\nHolders of the sampled blocks of sites matching \"");
  cli_put_safe(stdout, q->text);
  printf("\" (estimated %s; %zu root%s reach%s them; largest first)\n"
         "  through: the bytes of these blocks the root reaches by that path shape;\n"
         "  alone: of those, the bytes no other root reaches (freed if it alone let go)\n",
         size_text(r.total, b1, sizeof b1), r.roots, r.roots == 1 ? "" : "s",
         r.roots == 1 ? "es" : "");
  for (size_t i = 0; i < r.n; i++) {
    const hd_holder *h = &r.v[i];
    printf("  through %s (%.1f%%), alone %s (%.1f%%), %llu sampled blocks:\n",
           size_text(h->through, b1, sizeof b1), r.total > 0 ? 100 * h->through / r.total : 0,
           size_text(h->alone, b2, sizeof b2), r.total > 0 ? 100 * h->alone / r.total : 0,
           (unsigned long long)h->blocks);
    static char steps[MAX_SHAPE_STEPS][1200];
    size_t ns = holder_steps(a, &r, h, steps, MAX_SHAPE_STEPS);
    for (size_t k = 0; k < ns; k++) {
      fputs(k ? "    -> " : "    ", stdout);
      cli_put_safe(stdout, steps[k]);
      putchar('\n');
    }
  }
  if (r.examined < r.roots)
    printf("  (%zu more roots reach these blocks: only the %zu nearest are broken down,\n"
           "   within a work limit of %d passes over the graph)\n",
           r.roots - r.examined, r.examined, HD_WORK_PASSES);
  if (r.total > 0)
    printf("  shared by several roots: %s (%.1f%%; the alone shares and this add up to 100%%)\n",
           size_text(r.shared, b1, sizeof b1), 100 * r.shared / r.total);
  hd_result_free(&r);
}

/* The holders as JSON: {"estimate", "shared", "roots", "examined",
   "list": [{"kind", "root", "steps", "blocks", "through", "alone"}]}. */
static void json_holders(FILE *o, analysis *a, path_match *match, const void *arg, json_writer str)
{
  hd_result r;
  find_holders(a, match, arg, &r);
  fprintf(o, "{\"estimate\":%.0f,\"shared\":%.0f,\"roots\":%zu,\"examined\":%zu,\"list\":[",
          r.total, r.shared, r.roots, r.examined);
  for (size_t i = 0; i < r.n; i++) {
    const hd_holder *h = &r.v[i];
    const hg_snapshot *s = &a->s;
    int weak = h->root == 1 + HG_KIND_WEAK;
    uint32_t l = h->root - 1 - HG_KINDS;
    fprintf(o, "%s{\"kind\":\"%s\",\"root\":", i ? "," : "",
            weak ? kind_names[HG_KIND_WEAK] : kind_names[s->label_kind[l]]);
    str(o, weak ? "weak references only" : a->label_text[l]);
    fputs(",\"steps\":[", o);
    static char steps[MAX_SHAPE_STEPS][1200];
    size_t ns = holder_steps(a, &r, h, steps, MAX_SHAPE_STEPS);
    for (size_t k = 0; k < ns; k++) {
      if (k) fputc(',', o);
      str(o, steps[k]);
    }
    fprintf(o, "],\"blocks\":%llu,\"through\":%.0f,\"alone\":%.0f}",
            (unsigned long long)h->blocks, h->through, h->alone);
  }
  fputs("]}", o);
  hd_result_free(&r);
}

/* ---- dominator tree ---- */

/* A tree node's name: the kind, the root label, "string 32-63 B from
   f (file:line)", or "N others". */
static void dt_text(analysis *a, const dt_node *d, char *buf, size_t n)
{
  char tb[32], b1[32], b2[32];
  switch (d->type) {
  case DT_ROOT: snprintf(buf, n, "all roots"); break;
  case DT_KIND: snprintf(buf, n, "%s", kind_names[d->example - 1]); break;
  case DT_LABEL: snprintf(buf, n, "%s", a->label_text[d->example - 1 - HG_KINDS]); break;
  case DT_OTHERS:
    snprintf(buf, n, "%u other group%s", d->example, d->example > 1 ? "s" : "");
    break;
  default: {
    uint64_t lo = 1ull << d->size_class, hi = 2 * lo - 1;
    int len;
    char what[PATH_STEP_TEXT];
    if (a->groups && a->groups[d->example]) block_text(a, d->example, 0, what, sizeof what);
    else snprintf(what, sizeof what, "%s", tag_name(d->tag, tb, sizeof tb));
    if (lo < 1024) len = snprintf(buf, n, "%s %llu-%llu B", what,
                                  (unsigned long long)lo, (unsigned long long)hi);
    else len = snprintf(buf, n, "%s %s-%s", what,
                        human_bytes((double)lo, b1, sizeof b1), human_bytes((double)hi, b2, sizeof b2));
    if (d->alloc && len > 0 && (size_t)len < n) {
      char site[512];
      site_text(a, d->alloc, site, sizeof site);
      snprintf(buf + len, n - (size_t)len, " from %s", site);
    }
  }
  }
}

/* The tree's groups of typed blocks (NULL without types). */
static const uint32_t *tree_groups(analysis *a)
{
  if (a->types && !a->groups) a->groups = st_groups(a->types, a->s.n);
  return a->groups;
}

typedef struct { uint32_t nodes, width, depth; } tree_opts;
#define TREE_DEFAULTS { 500, 10, 10 }

static void print_tree_node(analysis *a, const dt_tree *t, uint32_t i, unsigned depth)
{
  const dt_node *d = &t->v[i];
  char b1[32], name[1100];
  dt_text(a, d, name, sizeof name);
  printf("  %12s %6.1f%% %9llu  %*s", size_text((double)d->retained, b1, sizeof b1),
         a->live_bytes ? 100.0 * (double)d->retained / (double)a->live_bytes : 0,
         (unsigned long long)d->count, 2 * depth, "");
  if (d->type == DT_LABEL) printf("%s ", kind_names[a->s.label_kind[d->example - 1 - HG_KINDS]]);
  cli_put_safe(stdout, name);
  puts(d->more ? " ..." : "");
  for (uint32_t k = 0; k < d->nkids; k++) print_tree_node(a, t, d->first + k, depth + 1);
}

static void print_tree(analysis *a, const tree_opts *o)
{
  dt_tree t;
  dt_build(a->r, &a->s, &a->dom, a->retained, a->site_loc, tree_groups(a), o->nodes, o->width, o->depth, &t);
  printf("\nDominator tree (%u nodes; a node retains its children; \"...\": more below)\n"
         "  %12s %7s %9s  %s\n", t.n, "retained", "%", "count", "node");
  if (t.n) print_tree_node(a, &t, 0, 0);
  dt_free(&t);
}

/* The tree as a flat JSON array, parents first, children of a node
   together and heaviest first. */
static void json_tree(FILE *o, analysis *a, const tree_opts *opt, json_writer str)
{
  static const char *const types[] = { "root", "kind", "label", "blocks", "others" };
  dt_tree t;
  dt_build(a->r, &a->s, &a->dom, a->retained, a->site_loc, tree_groups(a), opt->nodes, opt->width, opt->depth, &t);
  fputs(",\n\"tree\":[", o);
  for (uint32_t i = 0; i < t.n; i++) {
    const dt_node *d = &t.v[i];
    char name[1100];
    dt_text(a, d, name, sizeof name);
    fprintf(o, "%s\n{\"parent\":%d,\"type\":\"%s\",\"name\":", i ? "," : "", d->parent, types[d->type]);
    str(o, name);
    if (d->type == DT_LABEL)
      fprintf(o, ",\"kind\":\"%s\"", kind_names[a->s.label_kind[d->example - 1 - HG_KINDS]]);
    if (d->type == DT_BLOCKS && d->alloc) {
      fputs(",\"function\":", o);
      str(o, site_function(a, d->alloc));
    }
    fprintf(o, ",\"retained\":%llu,\"self\":%llu,\"count\":%llu,\"children\":%u%s}",
            (unsigned long long)d->retained, (unsigned long long)d->self,
            (unsigned long long)d->count, d->nkids, d->more ? ",\"more\":true" : "");
  }
  fputc(']', o);
  dt_free(&t);
}

/* ---- V8 .heapsnapshot ---- */

static int write_heapsnapshot(analysis *a, const char *path)
{
  hg_snapshot *s = &a->s;
  FILE *o = out_open(path);
  if (!o) return 1;
  strpool *names = strpool_new();
  strpool_intern(names, "", 0);
  char buf[1024], tb[32];
  /* Node names first, so that the strings table can follow the arrays. */
  uint32_t *name = xmalloc((s->n ? s->n : 1) * sizeof *name);
  for (uint32_t v = 0; v < s->n; v++) {
    uint32_t ident;
    uint64_t ext;
    if (v == 0) snprintf(buf, sizeof buf, "(GC roots)");
    else if (v >= s->base && hg_custom(s, v - s->base + 1, &ident, &ext))
      snprintf(buf, sizeof buf, "custom %s", strpool_get(a->r->strs, ident));
    else if (v >= s->base && a->types && st_type(a->types, v))  /* DevTools' constructor */
      snprintf(buf, sizeof buf, "%s", st_type_text(a->types, st_type(a->types, v)));
    else if (v >= s->base && !s->alloc[v - s->base])
      snprintf(buf, sizeof buf, "%s", tag_name(s->tag[v - s->base], tb, sizeof tb));
    else node_text(a, v, buf, sizeof buf);
    name[v] = strpool_intern(names, buf, strlen(buf));
  }
  fprintf(o, "{\"snapshot\":{\"meta\":{\"node_fields\":[\"type\",\"name\",\"id\",\"self_size\","
          "\"edge_count\",\"trace_node_id\",\"detachedness\"],\"node_types\":[[\"hidden\",\"array\","
          "\"string\",\"object\",\"code\",\"closure\",\"regexp\",\"number\",\"native\",\"synthetic\","
          "\"concatenated string\",\"sliced string\",\"symbol\",\"bigint\",\"object shape\"],\"string\","
          "\"number\",\"number\",\"number\",\"number\",\"number\"],\"edge_fields\":[\"type\","
          "\"name_or_index\",\"to_node\"],\"edge_types\":[[\"context\",\"element\",\"property\","
          "\"internal\",\"hidden\",\"shortcut\",\"weak\"],\"string_or_number\",\"node\"],"
          "\"trace_function_info_fields\":[],\"trace_node_fields\":[],\"sample_fields\":[],"
          "\"location_fields\":[]},\"node_count\":%u,\"edge_count\":%llu,"
          "\"trace_function_count\":0},\n\"nodes\":[", s->n, (unsigned long long)s->nadj);
  for (uint32_t v = 0; v < s->n; v++) {
    int type = 9;                       /* synthetic */
    uint64_t size = 0;
    if (v >= s->base) {
      uint32_t b = v - s->base + 1;
      unsigned t = s->tag[b - 1];
      type = t == 252 ? 2 : t == 253 ? 7 : t == 247 ? 5 : t == 255 ? 8 : t == 254 ? 1 : 3;
      size = hg_block_bytes(s, b);
    }
    fprintf(o, "%s%d,%u,%llu,%llu,%llu,0,0", v ? ",\n" : "", type, name[v],
            (unsigned long long)(2 * (uint64_t)v + 1), (unsigned long long)size,
            (unsigned long long)(s->off[v + 1] - s->off[v]));
  }
  fputs("],\n\"edges\":[", o);
  uint64_t e = 0;
  for (uint32_t v = 0; v < s->n; v++)
    for (uint64_t k = s->off[v]; k < s->off[v + 1]; k++, e++) {
      if (v < s->base)                  /* named edges from the synthetic nodes */
        fprintf(o, "%s2,%u,%llu", e ? ",\n" : "", name[s->adj[k]],
                (unsigned long long)s->adj[k] * 7);
      else
        fprintf(o, "%s1,%llu,%llu", e ? ",\n" : "", (unsigned long long)(k - s->off[v]),
                (unsigned long long)s->adj[k] * 7);
    }
  fputs("],\n\"trace_function_infos\":[],\"trace_tree\":[],\"samples\":[],\"locations\":[],\n\"strings\":[", o);
  for (uint32_t i = 0; i < strpool_count(names); i++) {
    if (i) fputs(",\n", o);
    json_str(o, strpool_get(names, i));
  }
  fputs("]}\n", o);
  free(name);
  strpool_free(names);
  return out_close(o, path);
}

/* ---- evolution and diff ---- */

static void print_evolution_line(analysis *a, int first)
{
  char b1[32], b2[32];
  if (first) {
    printf("%5s %9s %10s %10s", "snap", "time(s)", "blocks", "live");
    for (uint32_t k = 0; k < HG_KINDS; k++) printf(" %10s", kind_names[k]);
    printf(" %10s  top root\n", "shared");
  }
  printf("%5llu %9.3f %10u %10s", (unsigned long long)a->s.seq, a->s.time_ns / 1e9,
         a->s.nblocks, size_text((double)a->live_bytes, b1, sizeof b1));
  kind_row rows[HG_KINDS + 1];
  size_t n = kind_rows(&a->s, a->retained, a->live_bytes, rows);
  for (uint32_t k = 0; k < HG_KINDS; k++)
    printf(" %10s", size_text((double)a->retained[1 + k], b2, sizeof b2));
  printf(" %10s", size_text((double)rows[n - 1].retained, b2, sizeof b2));
  uint32_t best = DOM_NONE;
  for (uint32_t l = 0; l < a->s.nlabels; l++)
    if (best == DOM_NONE || a->retained[1 + HG_KINDS + l] > a->retained[1 + HG_KINDS + best]) best = l;
  if (best != DOM_NONE) {
    printf("  %s ", size_text((double)a->retained[1 + HG_KINDS + best], b1, sizeof b1));
    cli_put_safe(stdout, a->label_text[best]);
  }
  putchar('\n');
}

typedef struct { char *name; double before, after; } growth;
static int by_growth(const void *x, const void *y)
{
  const growth *a = x, *b = y;
  double da = a->after - a->before, db = b->after - b->before;
  return da < db ? 1 : da > db ? -1 : 0;
}

static void add_growth(growth **g, size_t *n, size_t *cap, strpool *keys,
                       const char *name, double v, int after)
{
  uint32_t k = strpool_intern(keys, name, strlen(name));
  if (k >= *n) {
    grow_array((void **)g, cap, k + 1, sizeof **g);
    memset(*g + *n, 0, (k + 1 - *n) * sizeof **g);
    *n = k + 1;
    (*g)[k].name = (char *)strpool_get(keys, k);
  }
  if (after) (*g)[k].after += v; else (*g)[k].before += v;
}

static void print_growth(const char *title, growth *g, size_t n, size_t top)
{
  char b1[32], b2[32], b3[32];
  if (n) qsort(g, n, sizeof *g, by_growth);
  printf("\n%s\n  %12s %12s %12s  %s\n", title, "before", "after", "growth", "name");
  for (size_t i = 0; i < n && i < top; i++) {
    double d = g[i].after - g[i].before;
    char signed_growth[40];
    snprintf(signed_growth, sizeof signed_growth, "%s%s", d < 0 ? "-" : "+",
             size_text(fabs(d), b3, sizeof b3));
    printf("  %12s %12s %12s  ", size_text(g[i].before, b1, sizeof b1),
           size_text(g[i].after, b2, sizeof b2), signed_growth);
    cli_put_safe(stdout, g[i].name);
    putchar('\n');
  }
}

static void diff_collect(analysis *a, int after, growth **roots, size_t *nr, size_t *cr,
                         strpool *rk, growth **sites, size_t *ns, size_t *cs, strpool *sk)
{
  for (uint32_t l = 0; l < a->s.nlabels; l++) {
    char buf[1100];
    snprintf(buf, sizeof buf, "%s %s", kind_names[a->s.label_kind[l]], a->label_text[l]);
    add_growth(roots, nr, cr, rk, buf, (double)a->retained[1 + HG_KINDS + l], after);
  }
  site_table t = { 0 };
  sites_collect(a, &t);
  for (size_t i = 0; i < t.n; i++) add_growth(sites, ns, cs, sk, t.rows[i].name, t.rows[i].est, after);
  free(t.rows);
  strpool_free(t.keys);
}

/* ---- JSON ---- */

/* A site's row holds its blocks that a root retains; the weak row those
   reachable only through weak references. */
static int match_site(analysis *a, uint32_t block, uint32_t alloc, const void *site)
{
  if (hd_weak_only(&a->holders, block)) return strcmp(site, weak_row_name) == 0;
  char buf[1024];
  site_text(a, alloc, buf, sizeof buf);
  return strcmp(buf, site) == 0;
}

static void json_paths(FILE *o, analysis *a, const path_set *ps, size_t npaths, json_writer str)
{
  fputc('[', o);
  for (size_t i = 0; i < ps->nrows && i < npaths; i++) {
    fprintf(o, "%s{\"blocks\":%llu,\"bytes\":%llu,\"steps\":[", i ? "," : "",
            (unsigned long long)ps->rows[i].count, (unsigned long long)ps->rows[i].bytes);
    char *text = path_text(a->paths, ps->rows[i].key);
    int first = 1;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
      if (!first) fputc(',', o);
      str(o, line);
      first = 0;
    }
    free(text);
    fputs("]}", o);
  }
  fputc(']', o);
}

/* --by type: the table of sizes by type. */
static int by_type;

/* The analysis of one snapshot as one JSON object (the format is in
   docs/ocaml-memprof.md): the header, retained by root kind, the [top]
   roots, the [top] sites with their [npaths] first retainer paths, and
   with [query] the paths to the blocks of the matching sites, and the
   dominator tree pruned as [topt] says. */
static void json_stacks(FILE *o, analysis *a, const site_table *sites, size_t top, json_writer str);

static void write_json(FILE *o, analysis *a, const char *path, size_t top, size_t npaths,
                       const site_query *query, const tree_opts *topt, int stacks,
                       json_writer str)
{
  hg_snapshot *s = &a->s;
  fputs("{\"trace\":", o);
  str(o, path);
  fprintf(o, ",\"sampling_rate\":%.17g,\n\"snapshot\":{\"seq\":%llu,\"time_ns\":%llu,"
          "\"pause_ns\":%llu,\"complete\":%s,\"blocks_missing\":%s,\"blocks\":%u,"
          "\"edges\":%llu,\"weak_edges\":%llu,\"live_bytes\":%llu,\"outside_heap_bytes\":%llu},"
          "\n\"snapshots\":[", a->rate, (unsigned long long)s->seq, (unsigned long long)s->time_ns,
          (unsigned long long)s->pause_ns, s->complete ? "true" : "false",
          s->end_flags & MPT_SNAP_INCOMPLETE ? "true" : "false", s->nblocks,
          (unsigned long long)s->nedges_file, (unsigned long long)s->nweak,
          (unsigned long long)a->live_bytes, (unsigned long long)a->ext_bytes);
  for (size_t i = 0; i < a->nseen; i++)
    fprintf(o, "%s[%llu,%llu]", i ? "," : "", (unsigned long long)a->seen[2 * i],
            (unsigned long long)a->seen[2 * i + 1]);
  fputs("],\n\"kinds\":[", o);
  kind_row kinds[HG_KINDS + 1];
  size_t nkinds = kind_rows(s, a->retained, a->live_bytes, kinds);
  for (size_t i = 0; i < nkinds; i++)
    fprintf(o, "%s{\"kind\":\"%s\",\"retained\":%llu,\"roots\":%zu}", i ? "," : "",
            kind_row_name(kinds[i].kind), (unsigned long long)kinds[i].retained, kinds[i].roots);
  fputs("],\n\"roots\":[", o);
  ranked *r = roots_ranked(a);
  for (size_t i = 0; i < s->nlabels && i < top; i++) {
    fprintf(o, "%s{\"kind\":\"%s\",\"label\":", i ? "," : "", kind_names[s->label_kind[r[i].node]]);
    str(o, a->label_text[r[i].node]);
    fprintf(o, ",\"retained\":%llu}", (unsigned long long)r[i].ret);
  }
  free(r);
  fputs("],\n\"sites\":[", o);
  site_table t = { 0 };
  sites_collect(a, &t);
  /* The paths first, written aside, so that the path tree is freed
     before the holders' searches allocate theirs (8 bytes per node less
     at the peak); --paths 0: none asked, none computed. */
  size_t nsites = t.n < top ? t.n : top;
  char **site_paths = xcalloc(nsites ? nsites : 1, sizeof *site_paths);
  for (size_t i = 0; i < nsites && npaths; i++) {
    path_set ps;
    size_t len;
    FILE *m = open_memstream(&site_paths[i], &len);
    collect_paths(a, match_site, t.rows[i].name, &ps);
    json_paths(m, a, &ps, npaths, str);
    path_set_free(&ps);
    fclose(m);
  }
  char *query_paths = NULL;
  size_t query_blocks = 0, query_distinct = 0;
  if (query) {
    path_set ps;
    size_t len;
    FILE *m = open_memstream(&query_paths, &len);
    collect_paths(a, match_pattern, query, &ps);
    if (!ps.matched) site_hint(a, query);
    query_blocks = ps.matched;
    query_distinct = ps.nrows;
    json_paths(m, a, &ps, npaths, str);
    path_set_free(&ps);
    fclose(m);
  }
  paths_release(a);
  for (size_t i = 0; i < nsites; i++) {
    fprintf(o, "%s\n{\"site\":", i ? "," : "");
    str(o, t.rows[i].name);
    fputs(",\"function\":", o);
    str(o, t.rows[i].alloc ? site_function(a, t.rows[i].alloc) : "");
    fprintf(o, ",\"estimate\":%.0f,\"stderr\":%.0f,\"sampled\":%llu,\"paths\":", t.rows[i].est,
            sqrt(t.rows[i].var), (unsigned long long)t.rows[i].sampled);
    fputs(site_paths[i] ? site_paths[i] : "[]", o);
    free(site_paths[i]);
    fputs(",\"holders\":", o);
    json_holders(o, a, match_site, t.rows[i].name, str);
    fputc('}', o);
  }
  fputc(']', o);
  free(site_paths);
  if (stacks) json_stacks(o, a, &t, top, str);
  free(t.rows);
  strpool_free(t.keys);
  if (query) {
    fputs(",\n\"paths\":{\"pattern\":", o);
    str(o, query->text);
    fprintf(o, ",\"blocks\":%zu,\"distinct\":%zu,\"paths\":%s", query_blocks, query_distinct,
            query_paths);
    free(query_paths);
    fputs(",\"holders\":", o);
    json_holders(o, a, match_pattern, query, str);
    fputc('}', o);
  }
  json_tree(o, a, topt, str);
  if (by_type && a->types) json_types(o, a, top, str);
  fputs("}\n", o);
}

/* For the report's page, which hides frames of its own: every distinct
   allocation stack of the live sampled blocks (the frames --hide leaves,
   the innermost MAX_STACK_FRAMES), with its estimate, variance and
   sampled blocks, largest first, at most MAX_STACKS of them (the rest
   summed in "rest"), and the index of its site in the [top] first rows of
   [sites] (-1 beyond).  "stacks": {"locs": [[[function, file, line]...]
   per location, innermost entry first], "rows": [[estimate, variance,
   sampled, site, [location index, innermost first]]...], "rest": bytes}. */
#define MAX_STACKS 2000
#define MAX_STACK_FRAMES 64
typedef struct { uint32_t alloc; double est, var; uint64_t sampled; } stack_row;

static int by_stack_est(const void *x, const void *y)
{
  const stack_row *a = x, *b = y;
  return a->est < b->est ? 1 : a->est > b->est ? -1 : 0;
}

/* The locations of allocation [alloc]'s stack that --hide leaves, at most
   MAX_STACK_FRAMES, into [locs]; how many. */
static uint32_t visible_stack(const analysis *a, uint32_t alloc, uint32_t *locs)
{
  return visible_frames(a->r, &a->r->allocs[alloc - 1], locs, MAX_STACK_FRAMES);
}

static void json_stacks(FILE *o, analysis *a, const site_table *sites, size_t top, json_writer str)
{
  hg_snapshot *s = &a->s;
  strpool *keys = strpool_new();
  stack_row *rows = NULL;
  size_t nrows = 0, cap = 0;
  uint32_t locs[MAX_STACK_FRAMES];
  char key[MAX_STACK_FRAMES * 11 + 1];
  for (uint32_t b = 1; b <= s->nblocks; b++) {
    uint32_t al = s->alloc[b - 1];
    if (!al || hd_weak_only(&a->holders, b)) continue;
    uint32_t n = visible_stack(a, al, locs);
    size_t len = 0;
    for (uint32_t k = 0; k < n; k++) len += (size_t)sprintf(key + len, "%x,", locs[k]);
    uint32_t id = strpool_intern(keys, key, len);
    if (id >= nrows) {
      grow_array((void **)&rows, &cap, (size_t)id + 1, sizeof *rows);
      memset(rows + nrows, 0, ((size_t)id + 1 - nrows) * sizeof *rows);
      nrows = (size_t)id + 1;
      rows[id].alloc = al;
    }
    double var;
    rows[id].est += block_estimate(a, b, &var);
    rows[id].var += var;
    rows[id].sampled++;
  }
  if (nrows) qsort(rows, nrows, sizeof *rows, by_stack_est);
  size_t shown = nrows < MAX_STACKS ? nrows : MAX_STACKS;
  u64map index;                 /* location id -> 1 + index in "locs" */
  u64map_init(&index, 256);
  uint32_t *order = NULL;
  size_t norder = 0, ocap = 0;
  fputs(",\n\"stacks\":{\"rows\":[", o);
  for (size_t i = 0; i < shown; i++) {
    char name[1024];
    site_text(a, rows[i].alloc, name, sizeof name);
    long site = -1;
    for (size_t k = 0; k < sites->n && k < top && site < 0; k++)
      if (!strcmp(sites->rows[k].name, name)) site = (long)k;
    fprintf(o, "%s[%.0f,%.0f,%llu,%ld,[", i ? ",\n" : "", rows[i].est, rows[i].var,
            (unsigned long long)rows[i].sampled, site);
    uint32_t n = visible_stack(a, rows[i].alloc, locs);
    for (uint32_t k = 0; k < n; k++) {
      uint32_t *v = u64map_get(&index, locs[k]);
      if (!v) {
        grow_array((void **)&order, &ocap, norder + 1, sizeof *order);
        order[norder++] = locs[k];
        u64map_put(&index, locs[k], (uint32_t)norder);
        v = u64map_get(&index, locs[k]);
      }
      fprintf(o, "%s%u", k ? "," : "", *v - 1);
    }
    fputs("]]", o);
  }
  double rest = 0;
  for (size_t i = shown; i < nrows; i++) rest += rows[i].est;
  fprintf(o, "],\"rest\":%.0f,\"locs\":[", rest);
  for (size_t i = 0; i < norder; i++) {
    const mpt_location *l = ti_location(a->r->t, order[i]);
    fputs(i ? ",[" : "[", o);
    for (uint32_t k = 0; l && k < l->n; k++) {
      fputs(k ? ",[" : "[", o);
      str(o, l->entries[k].function ? l->entries[k].function : "");
      fputc(',', o);
      str(o, l->entries[k].file ? l->entries[k].file : "");
      fprintf(o, ",%u]", l->entries[k].line);
    }
    fputc(']', o);
  }
  fputs("]}", o);
  free(order);
  u64map_free(&index);
  free(rows);
  strpool_free(keys);
}

/* ---- driver ---- */

/* Load snapshot [which] (0: the last) of [path] into *a, analysed; with
   [evolution], print a line for every snapshot on the way.  0, or 1
   after a message; with [quiet_none], 2 without a message when the trace
   has no snapshot. */
static int load_snapshots(hg_reader *r, const char *path, uint64_t which, int evolution,
                          int quiet_none, analysis *a, exe_symbols *exe)
{
  if (hg_open(r, path) != 0) { msg("%s\n", r->error); return 1; }
  memset(a, 0, sizeof *a);
  a->r = r;
  a->exe = exe;
  a->rate = ti_get_header(r->t)->sampling_rate;
  uint64_t count = 0;
  int have = 0, k;
  hg_snapshot s;
  while ((k = hg_next(r, &s)) == 1) {
    count++;
    grow_array((void **)&a->seen, &a->seen_cap, 2 * a->nseen + 2, sizeof *a->seen);
    a->seen[2 * a->nseen] = s.seq;
    a->seen[2 * a->nseen++ + 1] = s.time_ns;
    if (evolution) {
      analysis e = { .r = r, .exe = exe, .s = s, .rate = a->rate };
      if (analyse(&e) != 0) { hg_snapshot_free(&s); return 1; }
      print_evolution_line(&e, count == 1);
      analysis_free(&e);
      continue;
    }
    if (which && count != which) { hg_snapshot_free(&s); continue; }
    if (have) hg_snapshot_free(&a->s);
    a->s = s;
    have = 1;
    if (which) break;
  }
  /* Read to its end: a periodic snapshot the trace ended without? */
  uint64_t end_ns, total, lost;
  char overdue[512];
  if (k == 0 && (!which || evolution) && count) {
    uint64_t *times = xmalloc(count * sizeof *times);
    for (size_t i = 0; i < count; i++) times[i] = a->seen[2 * i + 1];
    if (ti_end_info(r->t, &end_ns, &total, &lost) && end_ns > r->end_ns) r->end_ns = end_ns;
    if (hg_snapshot_overdue(times, count, r->end_ns, overdue, sizeof overdue))
      msg("note: %s: %s\n", path, overdue);
    free(times);
  }
  if (k < 0 || evolution || !have) { free(a->seen); a->seen = NULL; }
  if (k < 0) {
    msg("%s: malformed trace: %s\n", path, r->error);
    if (have) hg_snapshot_free(&a->s);
    return 1;
  }
  if (evolution) {
    if (!count) { msg("%s: no heap snapshot in this trace\n", path); return 1; }
    return 0;
  }
  if (!have) {
    if (quiet_none && !which) return 2;
    if (which && count) msg("%s: no snapshot %llu (the trace has %llu)\n", path,
                            (unsigned long long)which, (unsigned long long)count);
    else msg("%s: no heap snapshot in this trace (take one with "
             "OCAMLRUNPARAM=memprof=PATH,memprof_snapshot_at_exit=1)\n", path);
    return 1;
  }
  if (r->truncated && !a->s.complete)
    msg("warning: %s is cut short inside snapshot %llu: analysing the blocks written\n",
        path, (unsigned long long)a->s.seq);
  return analyse(a) == 0 ? 0 : 1;
}

static int load(hg_reader *r, const char *path, uint64_t which, int evolution,
                int quiet_none, analysis *a)
{
  exe_symbols exe = { 0 };
  int rc = load_snapshots(r, path, which, evolution, quiet_none, a, &exe);
  a->exe = NULL;               /* the labels are named */
  exe_symbols_free(&exe);
  return rc;
}

int retainers_json(FILE *o, const char *trace, const retainers_opts *opt, json_writer str)
{
  hg_reader r;
  if (hg_open(&r, trace) != 0) { msg("%s\n", r.error); return 1; }
  double rate = ti_get_header(r.t)->sampling_rate;
  tree_opts topt = { opt->tree_nodes, opt->tree_width, opt->tree_depth };
  set_hiding(opt->hide);
  size_t max = opt->max_snapshots ? opt->max_snapshots : 1;
  char **kept = xcalloc(max, sizeof *kept), *ev = NULL;
  size_t *kept_len = xcalloc(max, sizeof *kept_len), ev_len = 0;
  FILE *evo = open_memstream(&ev, &ev_len);
  uint64_t *seen = NULL;
  size_t nseen = 0, seen_cap = 0, count = 0;
  hg_snapshot s;
  exe_symbols exe = { 0 };
  int k, rc = 0;
  while ((k = hg_next(&r, &s)) == 1) {
    grow_array((void **)&seen, &seen_cap, 2 * nseen + 2, sizeof *seen);
    seen[2 * nseen] = s.seq;
    seen[2 * nseen++ + 1] = s.time_ns;
    if (r.truncated && !s.complete)
      msg("warning: %s is cut short inside snapshot %llu: analysing the blocks written\n",
          trace, (unsigned long long)s.seq);
    analysis a = { .r = &r, .exe = &exe, .s = s, .rate = rate };
    if (analyse(&a) != 0) { a.seen = NULL; analysis_free(&a); rc = 1; break; }
    a.seen = seen; a.nseen = nseen;
    /* Typed only if it may be kept (a helper's run per snapshot); no
       hint: the report's own types say the same of the same files. */
    if (opt->types && count + max >= opt->snapshots_hint)
      a.types = st_resolve(&r, &a.s, a.label_text, a.retained + 1 + HG_KINDS, a.live_bytes,
                           opt->cmt_paths, opt->ncmt_paths, 0);
    fprintf(evo, "%s[%llu,%llu,%llu", count ? "," : "", (unsigned long long)s.seq,
            (unsigned long long)s.time_ns, (unsigned long long)a.live_bytes);
    kind_row kinds[HG_KINDS + 1];
    size_t nkinds = kind_rows(&a.s, a.retained, a.live_bytes, kinds);
    for (uint32_t q = 0; q < HG_KINDS; q++) fprintf(evo, ",%llu", (unsigned long long)a.retained[1 + q]);
    fprintf(evo, ",%llu", (unsigned long long)kinds[nkinds - 1].retained);
    fputc(']', evo);
    size_t slot = count++ % max;
    free(kept[slot]);
    FILE *m = open_memstream(&kept[slot], &kept_len[slot]);
    write_json(m, &a, trace, opt->top, opt->npaths, NULL, &topt, opt->stacks, str);
    fclose(m);
    a.seen = NULL;
    analysis_free(&a);
  }
  fclose(evo);
  if (k < 0) { msg("%s: malformed trace: %s\n", trace, r.error); rc = 1; }
  if (!rc && !count) rc = 2;
  if (!rc) {
    fputs("{\"trace\":", o);
    str(o, trace);
    fprintf(o, ",\"count\":%zu,\"evolution\":{\"kinds\":[", count);
    for (uint32_t q = 0; q <= HG_KINDS; q++) fprintf(o, "%s\"%s\"", q ? "," : "", kind_row_name(q));
    fprintf(o, "],\"rows\":[%s]},\n\"list\":[", ev ? ev : "");
    size_t n = count < max ? count : max;
    for (size_t i = 0; i < n; i++) {
      if (i) fputc(',', o);
      fwrite(kept[(count - n + i) % max], 1, kept_len[(count - n + i) % max], o);
    }
    fputs("]}", o);
  }
  for (size_t i = 0; i < max; i++) free(kept[i]);
  free(kept); free(kept_len); free(ev); free(seen);
  exe_symbols_free(&exe);
  hg_close(&r);
  set_hiding(NULL);
  return rc;
}

static int retainers(int argc, char **argv, an_filter *hidden)
{
  const char *trace = NULL, *diff = NULL, *export = NULL, *site_text = NULL;
  uint64_t which = 0;
  size_t top = 10, npaths = 5;
  tree_opts topt = TREE_DEFAULTS;
  int evolution = 0, json = 0, tree = 0, no_types = 0;
  const char *cmt_paths[16];
  size_t ncmt_paths = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    char *end;
    if (cli_is_help(a)) { print_usage(stdout, usage, 0); return 0; }
    if (!strcmp(a, "--hide") || !strcmp(a, "--preset") || !strcmp(a, "--presets-file")) {
      if (cli_option(hidden, NULL, 0, argc, argv, &i) < 0) return 2;
      continue;
    }
    if (strcmp(a, "--depth") == 0 || strcmp(a, "--width") == 0 || strcmp(a, "--nodes") == 0) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      unsigned long long x = strtoull(v, &end, 10);
      if (!*v || *end || v[0] == '-' || x == 0 || x > UINT32_MAX)
        return cli_bad_value(a, v, "a count from 1");
      if (a[2] == 'd') topt.depth = (uint32_t)x;
      else if (a[2] == 'w') topt.width = (uint32_t)x;
      else topt.nodes = (uint32_t)x;
    } else if (strcmp(a, "--snapshot") == 0 || strcmp(a, "-n") == 0 || strcmp(a, "--paths") == 0) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      unsigned long long x = strtoull(v, &end, 10);
      if (!*v || *end || v[0] == '-' || (strcmp(a, "--snapshot") == 0 && x == 0))
        return cli_bad_value(a, v, strcmp(a, "--snapshot") == 0 ? "a snapshot number from 1"
                                                                 : "a count");
      if (strcmp(a, "--snapshot") == 0) which = x;
      else if (strcmp(a, "-n") == 0) top = (size_t)x;
      else npaths = (size_t)x;
    } else if (strcmp(a, "--site") == 0) {
      if (site_text) return cli_usage_error("--site: one pattern (use RE1|RE2 for several)");
      if (!(site_text = cli_value(argc, argv, &i))) return 2;
    } else if (strcmp(a, "--diff") == 0) {
      if (!(diff = cli_value(argc, argv, &i))) return 2;
    } else if (strcmp(a, "--heapsnapshot") == 0 || strncmp(a, "--heapsnapshot=", 15) == 0) {
      if (a[14] == '=') export = a + 15;
      else if (!(export = cli_value(argc, argv, &i))) return 2;
      if (!*export) return cli_bad_value("--heapsnapshot", export, "an output file");
    } else if (strcmp(a, "--evolution") == 0) {
      evolution = 1;
    } else if (strcmp(a, "--tree") == 0) {
      tree = 1;
    } else if (strcmp(a, "--by") == 0) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (strcmp(v, "type")) return cli_bad_value(a, v, "type");
      by_type = 1;
    } else if (strcmp(a, "--cmt-path") == 0) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (ncmt_paths == 16) return cli_usage_error("--cmt-path: 16 at most");
      cmt_paths[ncmt_paths++] = v;
    } else if (strcmp(a, "--no-types") == 0) {
      no_types = 1;
    } else if (strcmp(a, "--bytes") == 0) {
      exact_bytes = 1;
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (a[0] == '-' && a[1]) {
      return cli_unknown_option(a, usage, 0);
    } else if (trace) {
      return cli_usage_error("one TRACE only (got %s and %s)", trace, a);
    } else {
      trace = a;
    }
  }
  /* The export's file is the option's value: a trace there is almost
     surely a misplaced input (`--heapsnapshot TRACE`), and writing would
     destroy it. */
  if (export && (cli_looks_like_trace(export) || (trace && cli_same_file(export, trace))
                 || (diff && cli_same_file(export, diff))))
    return cli_usage_error("--heapsnapshot %s: that file is a trace; the option takes the file to "
                           "write (--heapsnapshot OUT.heapsnapshot TRACE)", export);
  if (!trace) return cli_usage_error("a TRACE is needed");
  if (json && (diff || evolution)) return cli_usage_error("--json goes with neither --diff nor --evolution");
  if ((by_type || ncmt_paths) && (diff || evolution))
    return cli_usage_error("--by type and --cmt-path go with neither --diff nor --evolution");
  if (by_type && no_types) return cli_usage_error("--by type needs types: not with --no-types");
  site_query site_q, *site = NULL;
  if (site_text) {
    if (cli_regex_option(&site_q.re, "--site", site_text)) return 2;
    site_q.text = site_text;
    site = &site_q;
  }
  hg_reader r;
  analysis a;
  int rc = 0;
  if (evolution) {
    rc = load(&r, trace, 0, 1, 0, &a);
    hg_close(&r);
    goto done;
  }
  if (load(&r, trace, which, 0, 0, &a) != 0) { hg_close(&r); rc = 1; goto done; }
  if (!diff && !no_types) {
    /* Types are used whenever the program's .cmt files are found; what
       is missing is said when they are asked for. */
    int asked = by_type || ncmt_paths;
    a.types = st_resolve(&r, &a.s, a.label_text, a.retained + 1 + HG_KINDS, a.live_bytes,
                         cmt_paths, ncmt_paths, asked);
    if (a.types) {
      st_print_hints(a.types, asked);
    } else if (by_type) {
      msg("--by type: no types for this snapshot (see the hint above)\n");
      analysis_free(&a); hg_close(&r); rc = 1;
      goto done;
    }
  }
  if (diff) {
    hg_reader r2;
    analysis b;
    if (load(&r2, diff, 0, 0, 0, &b) != 0) {
      analysis_free(&a); hg_close(&r); hg_close(&r2);
      rc = 1;
      goto done;
    }
    char b1[32], b2[32];
    printf("before: %s snapshot %llu, live %s; after: %s snapshot %llu, live %s\n",
           trace, (unsigned long long)a.s.seq, size_text((double)a.live_bytes, b1, sizeof b1),
           diff, (unsigned long long)b.s.seq, size_text((double)b.live_bytes, b2, sizeof b2));
    growth *roots = NULL, *sites = NULL;
    size_t nr = 0, cr = 0, ns = 0, cs = 0;
    strpool *rk = strpool_new(), *sk = strpool_new();
    diff_collect(&a, 0, &roots, &nr, &cr, rk, &sites, &ns, &cs, sk);
    diff_collect(&b, 1, &roots, &nr, &cr, rk, &sites, &ns, &cs, sk);
    print_growth("Roots by growth of retained size", roots, nr, top);
    print_growth("Sites by growth of live size (estimated)", sites, ns, top);
    free(roots); free(sites); strpool_free(rk); strpool_free(sk);
    analysis_free(&b);
    hg_close(&r2);
  } else if (json) {
    write_json(stdout, &a, trace, top, npaths, site, &topt, 0, json_str);
  } else {
    print_header(&a);
    print_kinds(&a);
    print_roots(&a, top);
    if (by_type) print_types(&a, top);
    print_sites(&a, top);
    if (site) { print_paths(&a, site, npaths); print_holders(&a, site); }
    if (tree) print_tree(&a, &topt);
  }
  if (export) rc = write_heapsnapshot(&a, export);
  analysis_free(&a);
  hg_close(&r);
done:
  if (site) regfree(&site->re);
  return rc;
}

int cmd_retainers(int argc, char **argv)
{
  an_filter hidden;
  an_filter_init(&hidden);
  set_hiding(&hidden);
  int rc = retainers(argc, argv, &hidden);
  set_hiding(NULL);
  an_filter_free(&hidden);
  return rc;
}

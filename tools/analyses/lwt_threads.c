/* lwt_threads.c: Lwt's promises per creation site, created (from samples)
   and pending (from heap snapshots); see lwt_threads.h.  Sites are
   interned in res->names as they are met (an allocation's site is
   computed once, alloc_site caching it), by name or, by stack, by their
   location ids. */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lwt_threads.h"

/* Lwt 5.6.1's functions that allocate a promise record, and the words (headers
   included) each call allocates for it: new_pending a callbacks record (4
   fields), its Pending state and the promise; return and fail a Fulfilled
   or Rejected state and the promise.  Every other constructor (wait, task,
   bind's result promises...) goes through new_pending. */
static const struct { const char *function; double words; } lt_constructors[] = {
  { "Lwt.Pending_promises.new_pending", LT_PENDING_WORDS },
  { "Lwt.Trivial_promises.return", 4 },
  { "Lwt.Trivial_promises.fail", 4 },
};
#define NCONSTRUCTORS (sizeof lt_constructors / sizeof *lt_constructors)

double lt_estimate(const lt_result *res, double samples, double words)
{ return samples / (res->rate * words); }

double lt_estimate_se(const lt_result *res, double samples, double words)
{ return sqrt(samples) / (res->rate * words); }

typedef struct {
  hg_reader *r;
  const an_filter *hiding;
  lt_result *res;
  uint32_t *alloc_site;        /* per allocation: site index + 1, 0 not yet */
  size_t alloc_site_cap;
  an_layer_cache layers;       /* for hiding and callback frames' holders */
  size_t counted;              /* allocations already classified */
  uint32_t *ids;               /* alloc_stack's stack */
  const mpt_location **locs;
  size_t ids_cap, locs_cap;
} lt_state;

/* an_drop_redundant_callbacks' question for location [loc]. */
static int loc_in_layer(void *u, uint32_t loc)
{
  lt_state *st = u;
  return an_cached_in_layer(&st->layers, loc, ti_location(st->r->t, loc));
}

/* Location [loc]'s an_hide_class under [hiding]. */
static int loc_hide_class(lt_state *st, uint32_t loc)
{
  return an_cached_hide_class(&st->layers, loc, ti_location(st->r->t, loc));
}

/* By stack: copy location [loc]'s frames into res->locs, once. */
static void keep_location(lt_state *st, uint32_t loc)
{
  lt_result *res = st->res;
  if (loc >= res->nlocs) {
    size_t cap = res->nlocs;
    grow_array((void **)&res->locs, &cap, (size_t)loc + 1, sizeof *res->locs);
    memset(res->locs + res->nlocs, 0, (cap - res->nlocs) * sizeof *res->locs);
    res->nlocs = cap;
  }
  lt_loc *d = &res->locs[loc];
  if (d->used) return;
  d->used = 1;
  const mpt_location *l = ti_location(st->r->t, loc);
  if (!l || !l->n) return;
  if (an_is_callback_location(l)) {
    /* one frame, named as every view names it */
    const mpt_loc_entry *e = &l->entries[0];
    char name[512];
    snprintf(name, sizeof name, "callback %s", e->function ? e->function : "?");
    d->frames = xcalloc(1, sizeof *d->frames);
    d->n = 1;
    d->frames[0] = (lt_frame){ xstrdup(name), xstrdup(e->file ? e->file : ""), e->line };
    return;
  }
  d->frames = xcalloc(l->n, sizeof *d->frames);
  d->n = l->n;
  for (uint32_t k = 0; k < l->n; k++) {
    const mpt_loc_entry *e = &l->entries[k];
    d->frames[k] = (lt_frame){ xstrdup(e->function ? e->function : ""), xstrdup(e->file ? e->file : ""), e->line };
  }
}

/* Allocation [a]'s stack (innermost first) without its redundant
   callback frames (an_drop_redundant_callbacks, as every view drops
   them): its location ids into st->ids, their count returned. */
static uint32_t alloc_stack(lt_state *st, const hg_alloc *a)
{
  uint32_t n = a->stack_len;
  grow_array((void **)&st->ids, &st->ids_cap, n ? n : 1, sizeof *st->ids);
  grow_array((void **)&st->locs, &st->locs_cap, n ? n : 1, sizeof *st->locs);
  int callbacks = 0;
  for (uint32_t k = 0; k < n; k++) {
    st->ids[k] = st->r->stacks[a->stack_off + k];
    st->locs[k] = ti_location(st->r->t, st->ids[k]);
    callbacks |= an_is_callback_location(st->locs[k]);
  }
  return callbacks ? an_drop_redundant_callbacks(st->locs, st->ids, n, loc_in_layer, st) : n;
}

/* The key of allocation [a]'s site into [key] (its length returned): by
   stack its first locations' ids, else its first frame that [hiding]
   leaves, named "Function (file:line)". */
static size_t site_key(lt_state *st, const hg_alloc *a, char key[512])
{
  uint32_t len = alloc_stack(st, a);
  if (st->res->by_stack) {
    uint32_t n = len < LT_STACK_FRAMES ? len : LT_STACK_FRAMES;
    for (uint32_t k = 0; k < n; k++) {
      uint32_t loc = st->ids[k];
      keep_location(st, loc);
      memcpy(key + 4 * k, &loc, 4);
    }
    return 4 * (size_t)n;
  }
  snprintf(key, 512, "(no frame outside the hidden ones)");
  /* the innermost frame left: hiding is decided from the outer end */
  uint32_t site = len;
  for (uint32_t k = len, state = AN_SHOWN; k-- > 0;)
    if ((state = (uint32_t)an_hide_next(loc_hide_class(st, st->ids[k]), (int)state)) != AN_GONE) site = k;
  for (uint32_t k = site; k < len; k++) {
    const mpt_location *l = st->locs[k];
    if (l && l->n > 0)
      snprintf(key, 512, "%s%s (%s:%u)", an_is_callback_location(l) ? "callback " : "",
               l->entries[0].function, l->entries[0].file, l->entries[0].line);
    else snprintf(key, 512, "? (no debug information)");
    break;
  }
  return strlen(key);
}

/* The creation site (index in res->sites) of allocation [i]. */
static uint32_t site_of(lt_state *st, size_t i)
{
  if (i >= st->alloc_site_cap) {
    size_t old = st->alloc_site_cap;
    grow_array((void **)&st->alloc_site, &st->alloc_site_cap, i + 1, sizeof *st->alloc_site);
    memset(st->alloc_site + old, 0, (st->alloc_site_cap - old) * sizeof *st->alloc_site);
  }
  if (st->alloc_site[i]) return st->alloc_site[i] - 1;
  char key[512];
  size_t len = site_key(st, &st->r->allocs[i], key);
  lt_result *res = st->res;
  uint32_t id = strpool_intern(res->names, key, len);
  if (id >= res->nsites) {
    grow_array((void **)&res->sites, &res->sites_cap, (size_t)id + 1, sizeof *res->sites);
    memset(res->sites + res->nsites, 0, ((size_t)id + 1 - res->nsites) * sizeof *res->sites);
    for (size_t k = res->nsites; k <= id; k++) res->sites[k].name = (uint32_t)k;
    res->nsites = (size_t)id + 1;
  }
  st->alloc_site[i] = id + 1;
  return id;
}

double lt_constructor_words(const mpt_location *l)
{
  if (!l || !l->n || !l->entries[0].function) return 0;
  for (size_t k = 0; k < NCONSTRUCTORS; k++)
    if (!strcmp(l->entries[0].function, lt_constructors[k].function)) return lt_constructors[k].words;
  return 0;
}

/* The words per promise of the constructor allocating [i], 0 for none. */
static double constructor_words(lt_state *st, size_t i)
{
  const hg_alloc *a = &st->r->allocs[i];
  return a->stack_len ? lt_constructor_words(ti_location(st->r->t, st->r->stacks[a->stack_off])) : 0;
}

/* Count the allocations read since the last call at their creation sites. */
static void count_created(lt_state *st)
{
  for (; st->counted < st->r->nallocs; st->counted++) {
    double words = constructor_words(st, st->counted);
    if (!words) continue;
    uint32_t site = site_of(st, st->counted);   /* may grow res->sites */
    lt_site *s = &st->res->sites[site];
    double n = st->r->allocs[st->counted].nsamples;
    s->created_samples += n;
    s->created += lt_estimate(st->res, n, words);
    /* Variances add up over constructors of different sizes. */
    double se = lt_estimate_se(st->res, n, words);
    s->created_se = sqrt(s->created_se * s->created_se + se * se);
  }
}

/* Node of block b, and back. */
static inline uint32_t node_of(const hg_snapshot *s, uint32_t b) { return s->base + b - 1; }
static inline uint32_t block_of(const hg_snapshot *s, uint32_t node)
{ return node >= s->base && node < s->base + s->nblocks ? node - s->base + 1 : 0; }
static inline uint64_t edges(const hg_snapshot *s, uint32_t b) { return s->off[node_of(s, b) + 1] - s->off[node_of(s, b)]; }
static inline uint32_t edge(const hg_snapshot *s, uint32_t b, uint64_t k)
{ return block_of(s, s->adj[s->off[node_of(s, b)] + k]); }
static inline int shaped(const hg_snapshot *s, uint32_t b, unsigned tag, uint64_t wosize)
{ return b && s->tag[b - 1] == tag && hg_wosize(s, b) == wosize; }

/* The regular callbacks under a callbacks record's first pointer field.
   Edges hold only pointer fields, so an empty regular list (a constant
   constructor) leaves that edge to the cancel list or how_to_cancel: only
   the shapes of regular callback leaves are counted, which theirs never
   have: Regular_callback_list_implicitly_removed_callback (tag 1, one
   field: the closure, or no edge for a closed one) and
   _explicitly_removable_callback (tag 2, one field: a ref holding Some f;
   None is a removed one), under _concat nodes (tag 0, two fields). */
static uint64_t count_callbacks(const hg_snapshot *s, uint32_t first, uint32_t **stack, size_t *cap)
{
  uint64_t n = 0;
  size_t sp = 0;
  grow_array((void **)stack, cap, 1, sizeof **stack);
  (*stack)[sp++] = first;
  /* A list is a tree of a promise's own nodes; the bound guards against
     cycles of blocks that only look like one. */
  for (uint64_t visited = 0; sp && visited < 1u << 20; visited++) {
    uint32_t b = (*stack)[--sp];
    if (shaped(s, b, 0, 2)) {
      for (uint64_t k = 0; k < edges(s, b); k++) {
        grow_array((void **)stack, cap, sp + 1, sizeof **stack);
        (*stack)[sp++] = edge(s, b, k);
      }
    } else if (shaped(s, b, 1, 1)) {
      uint32_t f = edges(s, b) ? edge(s, b, 0) : 0;
      if (!edges(s, b) || (f && s->tag[f - 1] == 247)) n++;
    } else if (shaped(s, b, 2, 1) && edges(s, b) == 1) {
      uint32_t ref = edge(s, b, 0);
      if (shaped(s, ref, 0, 1) && edges(s, ref) == 1 && shaped(s, edge(s, ref, 0), 0, 1)) n++;
    }
  }
  return n;
}

static void scan_snapshot(lt_state *st, const hg_snapshot *s)
{
  lt_result *res = st->res;
  grow_array((void **)&res->snaps, &res->snaps_cap, res->nsnaps + 1, sizeof *res->snaps);
  lt_snapshot *out = &res->snaps[res->nsnaps++];
  memset(out, 0, sizeof *out);
  out->seq = s->seq;
  out->time_ns = s->time_ns;
  out->nby_site = res->nsites;
  out->by_site = xcalloc(res->nsites ? res->nsites : 1, sizeof *out->by_site);
  uint32_t *stack = NULL;
  size_t cap = 0;
  for (uint32_t p = 1; p <= s->nblocks; p++) {
    if (!shaped(s, p, 0, 1) || edges(s, p) != 1) continue;
    uint32_t state = edge(s, p, 0);
    if (!shaped(s, state, LT_PENDING_TAG, 1) || edges(s, state) != 1) continue;
    uint32_t cbs = edge(s, state, 0);
    if (!shaped(s, cbs, 0, 4)) continue;
    uint64_t ncb = edges(s, cbs) ? count_callbacks(s, edge(s, cbs, 0), &stack, &cap) : 0;
    out->pending++;
    out->callbacks += ncb;
    /* The site is that of new_pending's call; its three blocks were
       sampled independently, each adding its samples. */
    const uint32_t parts[3] = { p, state, cbs };
    int sampled = 0;
    for (int k = 0; k < 3; k++) {
      uint32_t a = s->alloc[parts[k] - 1];
      if (!a) continue;
      uint32_t site = site_of(st, a - 1);
      if (site >= out->nby_site) {
        out->by_site = xrealloc(out->by_site, ((size_t)site + 1) * sizeof *out->by_site);
        memset(out->by_site + out->nby_site, 0, ((size_t)site + 1 - out->nby_site) * sizeof *out->by_site);
        out->nby_site = (size_t)site + 1;
      }
      double n = st->r->allocs[a - 1].nsamples;
      out->by_site[site].samples += n;
      out->by_site[site].callback_samples += n * (double)ncb;
      out->by_site[site].callback_samples_sq += n * (double)ncb * (double)ncb;
      sampled = 1;
    }
    out->pending_sampled += sampled;
  }
  free(stack);
}

int lt_run(const char *path, const an_filter *hiding, int by_stack, lt_result *res)
{
  memset(res, 0, sizeof *res);
  res->by_stack = by_stack;
  res->names = strpool_new();
  hg_reader r;
  if (hg_open(&r, path) != 0) { msg("%s\n", r.error); return 1; }
  res->rate = ti_get_header(r.t)->sampling_rate;
  lt_state st = { .r = &r, .hiding = hiding, .res = res, .layers = { .f = hiding } };
  hg_snapshot s;
  int k, rc = 0;
  while ((k = hg_next(&r, &s)) == 1) {
    count_created(&st);
    scan_snapshot(&st, &s);
    hg_snapshot_free(&s);
  }
  if (k < 0) { msg("%s\n", r.error); rc = 1; }
  else count_created(&st);
  res->allocs_seen = r.nallocs;
  res->truncated = r.truncated;
  free(st.alloc_site);
  free(st.ids);
  free(st.locs);
  an_layer_cache_free(&st.layers);
  hg_close(&r);
  return rc;
}

int lt_found(const lt_result *res)
{
  for (size_t i = 0; i < res->nsites; i++) if (res->sites[i].created_samples) return 1;
  for (size_t i = 0; i < res->nsnaps; i++) if (res->snaps[i].pending) return 1;
  return 0;
}

size_t lt_stack(const lt_result *res, uint32_t site, uint32_t out[LT_STACK_FRAMES])
{
  const char *key = strpool_get(res->names, site);
  size_t n = strpool_len(res->names, site) / 4;
  if (n > LT_STACK_FRAMES) n = LT_STACK_FRAMES;
  memcpy(out, key, 4 * n);
  return n;
}

void lt_free(lt_result *res)
{
  for (size_t i = 0; i < res->nlocs; i++) {
    for (uint32_t k = 0; k < res->locs[i].n; k++) { free(res->locs[i].frames[k].function); free(res->locs[i].frames[k].file); }
    free(res->locs[i].frames);
  }
  free(res->locs);
  for (size_t i = 0; i < res->nsnaps; i++) free(res->snaps[i].by_site);
  free(res->snaps);
  free(res->sites);
  if (res->names) strpool_free(res->names);
  memset(res, 0, sizeof *res);
}

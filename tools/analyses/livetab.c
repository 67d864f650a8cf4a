/* livetab.c: live samples by block id (see livetab.h). */

#include "livetab.h"

#include <stdlib.h>
#include <string.h>

void livetab_init(livetab *t)
{
  memset(t, 0, sizeof *t);
  t->ring = xcalloc(LIVETAB_WINDOW, sizeof *t->ring);
  t->bits = xcalloc(LIVETAB_WINDOW / 64, sizeof *t->bits);
  u64map_init(&t->stray_idx, 16);
}

void livetab_free(livetab *t)
{
  free(t->ring);
  free(t->bits);
  for (size_t i = 0; i < t->nruns; i++) free(t->runs[i].v);
  free(t->runs);
  free(t->stray);
  free(t->stray_free);
  u64map_free(&t->stray_idx);
  memset(t, 0, sizeof *t);
}

static inline int in_window(const livetab *t, uint64_t id)
{
  return id >= t->base && id - t->base < LIVETAB_WINDOW;
}

static inline uint64_t old_id(const an_live_old *e)
{
  return (uint64_t)e->id_hi << 32 | e->id_lo;
}

/* The run of [domain], made on first use. */
static livetab_run *run_of(livetab *t, uint32_t domain)
{
  size_t k = domain < LIVETAB_RUNS ? domain : LIVETAB_RUNS - 1;
  if (k >= t->nruns) {
    t->runs = xrealloc(t->runs, (k + 1) * sizeof *t->runs);
    memset(t->runs + t->nruns, 0, (k + 1 - t->nruns) * sizeof *t->runs);
    t->nruns = k + 1;
  }
  return &t->runs[k];
}

/* Index of [id] in run [r], or -1. */
static ptrdiff_t run_find(const livetab_run *r, uint64_t id)
{
  size_t lo = 0, hi = r->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t m = old_id(&r->v[mid]);
    if (m == id) return r->v[mid].r.nsamples ? (ptrdiff_t)mid : -1;
    if (m < id) lo = mid + 1; else hi = mid;
  }
  return -1;
}

/* Squeeze the holes out, from the first one on: most holes are recent
   (blocks die young), so this usually moves only the run's tail. */
static void run_compact(livetab_run *r)
{
  size_t k = r->first_hole;
  for (size_t i = k; i < r->n; i++)
    if (r->v[i].r.nsamples) r->v[k++] = r->v[i];
  r->n = k;
  r->holes = 0;
  r->first_hole = k;
}

/* A run is compacted when an eighth of it is holes: its array, whose
   pages stay resident once written, is then at most 8/7 of its live
   records, and each hole costs at most 8 moves. */
static inline int run_holey(const livetab_run *r) { return r->holes * 8 > r->n; }

/* Can [id] be appended to [r] (above its last id)? */
static inline int run_takes(const livetab_run *r, uint64_t id)
{
  return !r->n || old_id(&r->v[r->n - 1]) < id;
}

/* Append [id] (above the run's last id) and return its record. */
static an_live *run_append(livetab_run *r, uint64_t id)
{
  if (r->n == r->cap) {
    if (run_holey(r)) run_compact(r);
    if (r->n == r->cap) {
      size_t cap = r->cap < 1024 ? 1024 : r->cap + r->cap / 2;
      r->v = xrealloc(r->v, cap * sizeof *r->v);
      r->cap = cap;
    }
  }
  an_live_old *e = &r->v[r->n++];
  e->id_lo = (uint32_t)id;
  e->id_hi = (uint32_t)(id >> 32);
  return &e->r;
}

static an_live *stray_slot(livetab *t, uint64_t id, int *had)
{
  uint32_t *p = u64map_get(&t->stray_idx, id);
  if (p) { *had = 1; return &t->stray[*p]; }
  *had = 0;
  uint32_t k;
  if (t->nstray_free) k = t->stray_free[--t->nstray_free];
  else {
    grow_array((void **)&t->stray, &t->stray_cap, t->nstray + 1, sizeof *t->stray);
    k = (uint32_t)t->nstray++;
  }
  u64map_put(&t->stray_idx, id, k);
  return &t->stray[k];
}

static void evict(void *u, size_t slot, uint64_t id)
{
  livetab *t = u;
  livetab_run *r = run_of(t, an_live_domain(&t->ring[slot]));
  if (run_takes(r, id)) *run_append(r, id) = t->ring[slot];
  else { int had; *stray_slot(t, id, &had) = t->ring[slot]; }
  t->ring[slot].nsamples = 0;
}

/* Slide the window so that [id] sits in its middle; ring records whose ids
   fall below the new base move to their domain's run (or, when the run
   already holds a larger id, to the stray map).  Moving by at least half a
   window at a time bounds the bitmap scan to 2/64 word tests per id of a
   sequential stream. */
static void advance(livetab *t, uint64_t id)
{
  uint64_t nbase = id - LIVETAB_WINDOW / 2;
  if (t->ring_count)
    t->ring_count -= ring_evict(t->bits, LIVETAB_WINDOW, t->base, nbase, evict, t);
  t->base = nbase;
}

/* Run holding [id] (its own domain's first) and the index there, or NULL. */
static livetab_run *runs_find(livetab *t, uint64_t id, uint32_t domain, size_t *at)
{
  size_t own = domain < LIVETAB_RUNS ? domain : LIVETAB_RUNS - 1;
  for (size_t k = 0; k <= t->nruns; k++) {
    /* k = 0 is the own run; then the others in order. */
    size_t j = k == 0 ? own : k - 1;
    if (j >= t->nruns || (k && j == own)) continue;
    ptrdiff_t i = run_find(&t->runs[j], id);
    if (i >= 0) { *at = (size_t)i; return &t->runs[j]; }
  }
  return NULL;
}

an_live *livetab_get(livetab *t, uint64_t id, uint32_t domain)
{
  if (in_window(t, id)) {
    size_t slot = id & (LIVETAB_WINDOW - 1);
    return t->bits[slot / 64] >> (slot % 64) & 1 ? &t->ring[slot] : NULL;
  }
  size_t i;
  livetab_run *r = runs_find(t, id, domain, &i);
  if (r) return &r->v[i].r;
  uint32_t *p = u64map_get(&t->stray_idx, id);
  return p ? &t->stray[*p] : NULL;
}

an_live *livetab_put(livetab *t, uint64_t id, uint32_t domain, int *had)
{
  if (id > t->base && id - t->base >= LIVETAB_WINDOW) advance(t, id);
  if (!in_window(t, id)) {
    livetab_run *r = run_of(t, domain);
    if (run_takes(r, id) && !u64map_get(&t->stray_idx, id)) {
      *had = 0;
      return run_append(r, id);
    }
    ptrdiff_t i = run_find(r, id);
    if (i >= 0) { *had = 1; return &r->v[i].r; }
    return stray_slot(t, id, had);
  }
  size_t slot = id & (LIVETAB_WINDOW - 1);
  *had = (int)(t->bits[slot / 64] >> (slot % 64) & 1);
  if (!*had) {
    t->bits[slot / 64] |= 1ULL << (slot % 64);
    t->ring_count++;
  }
  return &t->ring[slot];
}

int livetab_del(livetab *t, uint64_t id, uint32_t domain, an_live *out)
{
  if (in_window(t, id)) {
    size_t slot = id & (LIVETAB_WINDOW - 1);
    if (!(t->bits[slot / 64] >> (slot % 64) & 1)) return 0;
    *out = t->ring[slot];
    t->ring[slot].nsamples = 0;
    t->bits[slot / 64] &= ~(1ULL << (slot % 64));
    t->ring_count--;
    return 1;
  }
  size_t i;
  livetab_run *r = runs_find(t, id, domain, &i);
  if (r) {
    *out = r->v[i].r;
    r->v[i].r.nsamples = 0;
    if (!r->holes++ || i < r->first_hole) r->first_hole = i;
    if (run_holey(r) && r->n > 1024) run_compact(r);
    return 1;
  }
  uint32_t k;
  if (!u64map_del(&t->stray_idx, id, &k)) return 0;
  *out = t->stray[k];
  grow_array((void **)&t->stray_free, &t->stray_free_cap, t->nstray_free + 1,
             sizeof *t->stray_free);
  t->stray_free[t->nstray_free++] = k;
  return 1;
}

/* Drop the records of [r] before [*head] (passed by livetab_drain) once
   they are an eighth of the run: the rest moves down and the array
   shrinks to it, so that the memory of the samples completed at the end
   of a trace goes back while the completion builds from them.  An eighth
   costs at most 7 moves per record and leaves at most 8/7 of the records
   still to walk (a quarter: 3 moves, 4/3; the report's peak on
   gen_trace --many-live 4 was 134 MB with a quarter, 125 with an eighth,
   120 with a sixteenth, for 0.2 s more CPU). */
static void run_release(livetab_run *r, size_t *head)
{
  if (*head < 4096 || *head * 8 < r->n) return;
  r->n -= *head;
  memmove(r->v, r->v + *head, r->n * sizeof *r->v);
  r->v = xrealloc(r->v, (r->n ? r->n : 1) * sizeof *r->v);
  r->cap = r->n;
  r->holes = 0;                  /* only their count matters: no more deletions */
  r->first_hole = 0;
  *head = 0;
}

static void walk(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u,
                 int drain)
{
  /* Ring slot s holds the id of the window [base, base + WINDOW) that is
     s modulo WINDOW. */
  for (size_t s = 0; s < LIVETAB_WINDOW; s++)
    if (t->bits[s / 64] >> (s % 64) & 1)
      f(u, t->base + ((s - t->base) & (LIVETAB_WINDOW - 1)), &t->ring[s]);
  /* The runs merged by id: the smallest head next (a few domains, so a
     scan of the heads). */
  size_t *head = xcalloc(t->nruns ? t->nruns : 1, sizeof *head);
  for (;;) {
    livetab_run *best = NULL;
    size_t bk = 0;
    for (size_t k = 0; k < t->nruns; k++) {
      livetab_run *r = &t->runs[k];
      while (head[k] < r->n && !r->v[head[k]].r.nsamples) head[k]++;
      if (head[k] < r->n && (!best || old_id(&r->v[head[k]]) < old_id(&best->v[head[bk]])))
        best = r, bk = k;
    }
    if (!best) break;
    const an_live_old *e = &best->v[head[bk]++];
    f(u, old_id(e), &e->r);
    if (drain) run_release(best, &head[bk]);
  }
  free(head);
  /* Stray records in use are those the map points at. */
  for (size_t i = 0; i <= t->stray_idx.mask; i++)
    if (t->stray_idx.e[i].key != UINT64_MAX)
      f(u, t->stray_idx.e[i].key, &t->stray[t->stray_idx.e[i].val]);
  if (t->stray_idx.has_max) f(u, UINT64_MAX, &t->stray[t->stray_idx.max_val]);
}

void livetab_each(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u)
{
  walk(t, f, u, 0);
}

void livetab_drain(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u)
{
  walk(t, f, u, 1);
  livetab_free(t);
  livetab_init(t);
}

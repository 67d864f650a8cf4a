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
  free(t->old);
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

/* Index of [id] in the sorted array, or -1. */
static ptrdiff_t old_find(const livetab *t, uint64_t id)
{
  size_t lo = 0, hi = t->nold;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    uint64_t m = old_id(&t->old[mid]);
    if (m == id) return t->old[mid].r.nsamples ? (ptrdiff_t)mid : -1;
    if (m < id) lo = mid + 1; else hi = mid;
  }
  return -1;
}

static void old_compact(livetab *t)
{
  size_t k = 0;
  for (size_t i = 0; i < t->nold; i++)
    if (t->old[i].r.nsamples) t->old[k++] = t->old[i];
  t->nold = k;
  t->old_holes = 0;
}

static void old_append(livetab *t, uint64_t id, const an_live *r)
{
  if (t->nold == t->old_cap) {
    if (t->old_holes * 2 > t->nold) old_compact(t);
    if (t->nold == t->old_cap) {
      size_t cap = t->old_cap < 1024 ? 1024 : t->old_cap + t->old_cap / 2;
      t->old = xrealloc(t->old, cap * sizeof *t->old);
      t->old_cap = cap;
    }
  }
  t->old[t->nold++] = (an_live_old){ (uint32_t)id, (uint32_t)(id >> 32), *r };
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
  if (!t->nold || old_id(&t->old[t->nold - 1]) < id) old_append(t, id, &t->ring[slot]);
  else { int had; *stray_slot(t, id, &had) = t->ring[slot]; }
  t->ring[slot].nsamples = 0;
}

/* Slide the window so that [id] sits in its middle; ring records whose ids
   fall below the new base move to the sorted array (or, when the array
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

an_live *livetab_get(livetab *t, uint64_t id)
{
  if (in_window(t, id)) {
    size_t slot = id & (LIVETAB_WINDOW - 1);
    return t->bits[slot / 64] >> (slot % 64) & 1 ? &t->ring[slot] : NULL;
  }
  ptrdiff_t i = old_find(t, id);
  if (i >= 0) return &t->old[i].r;
  uint32_t *p = u64map_get(&t->stray_idx, id);
  return p ? &t->stray[*p] : NULL;
}

an_live *livetab_put(livetab *t, uint64_t id, int *had)
{
  if (id > t->base && id - t->base >= LIVETAB_WINDOW) advance(t, id);
  if (!in_window(t, id)) {
    ptrdiff_t i = old_find(t, id);
    if (i >= 0) { *had = 1; return &t->old[i].r; }
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

int livetab_del(livetab *t, uint64_t id, an_live *out)
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
  ptrdiff_t i = old_find(t, id);
  if (i >= 0) {
    *out = t->old[i].r;
    t->old[i].r.nsamples = 0;
    t->old_holes++;
    if (t->old_holes * 2 > t->nold && t->nold > 1024) old_compact(t);
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

void livetab_each(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u)
{
  /* Ring slot s holds the id of the window [base, base + WINDOW) that is
     s modulo WINDOW. */
  for (size_t s = 0; s < LIVETAB_WINDOW; s++)
    if (t->bits[s / 64] >> (s % 64) & 1)
      f(u, t->base + ((s - t->base) & (LIVETAB_WINDOW - 1)), &t->ring[s]);
  for (size_t i = 0; i < t->nold; i++)
    if (t->old[i].r.nsamples) f(u, old_id(&t->old[i]), &t->old[i].r);
  /* Stray records in use are those the map points at. */
  for (size_t i = 0; i <= t->stray_idx.mask; i++)
    if (t->stray_idx.e[i].key != UINT64_MAX)
      f(u, t->stray_idx.e[i].key, &t->stray[t->stray_idx.e[i].val]);
  if (t->stray_idx.has_max) f(u, UINT64_MAX, &t->stray[t->stray_idx.max_val]);
}

size_t livetab_bytes(const livetab *t)
{
  return LIVETAB_WINDOW * (sizeof *t->ring + 1) / 1 + t->old_cap * sizeof *t->old +
         t->stray_cap * sizeof *t->stray + (t->stray_idx.mask + 1) * sizeof(u64entry);
}

/* lifecube.c: see lifecube.h.  The table of indices is rebuilt after a
   bin doubling (cells merge) and when it is three quarters full. */

#include <stdlib.h>
#include <string.h>

#include "lifecube.h"
#include "util.h"

static uint64_t life_bounds[LIFECUBE_NLIFE + 1];

uint64_t lifecube_life_lo(uint32_t c)
{
  if (!life_bounds[1]) {
    /* 0, then 1, 2, 5 x 10^k ns from 1 us to 1000 s, then no bound. */
    static const uint64_t m[3] = { 1, 2, 5 };
    uint32_t k = 1;
    for (uint64_t p = 1000; k < LIFECUBE_NLIFE; p *= 10)
      for (int j = 0; j < 3 && k < LIFECUBE_NLIFE; j++) life_bounds[k++] = m[j] * p;
    life_bounds[LIFECUBE_NLIFE] = UINT64_MAX;
  }
  return life_bounds[c];
}

uint32_t lifecube_life_class(uint64_t ns)
{
  uint32_t c = 0;
  while (c + 1 < LIFECUBE_NLIFE && ns >= lifecube_life_lo(c + 1)) c++;
  return c;
}

uint32_t lifecube_size_class(uint64_t bytes)
{
  if (bytes < 16) return 0;
  uint32_t c = 0;
  while (bytes >> (c + 5)) c++;        /* 2^(c+4) <= bytes < 2^(c+5) */
  c++;
  return c < LIFECUBE_NSIZE ? c : LIFECUBE_NSIZE - 1;
}

static uint64_t cell_hash(const lifecube_cell *k)
{
  return mix64(((uint64_t)k->node << 32 ^ k->key >> 32) ^ mix64(k->key + 0x9E3779B97F4A7C15ULL));
}

static int same_key(const lifecube_cell *x, const lifecube_cell *y)
{
  return x->node == y->node && x->key == y->key;
}

uint64_t lifecube_count(const lifecube *q, size_t i, unsigned k)
{
  uint32_t *hi = q->carry.count ? u64map_get(&q->carry, 3 * (uint64_t)i + k) : NULL;
  return (uint64_t)(hi ? *hi : 0) << 32 | q->v[i].count[k];
}

/* Add [x] to count [k] of cell [i]; a wrap is carried in [carry]. */
static void count_add(u64map *carry, lifecube_cell *c, size_t i, unsigned k, uint64_t x)
{
  uint64_t sum = c->count[k] + (x & UINT32_MAX);
  uint32_t hi = (uint32_t)(x >> 32) + (uint32_t)(sum >> 32);
  c->count[k] = (uint32_t)sum;
  if (!hi) return;
  uint32_t *p = u64map_get(carry, 3 * (uint64_t)i + k);
  if (p) *p += hi;
  else u64map_put(carry, 3 * (uint64_t)i + k, hi);
}

/* Index of the cell with key k (1 + index), or the empty slot for it. */
static uint32_t *find(lifecube *q, const lifecube_cell *k)
{
  size_t mask = q->nslots - 1;
  for (size_t h = cell_hash(k) & mask;; h = (h + 1) & mask) {
    uint32_t *s = &q->slot[h];
    if (!*s || same_key(&q->v[*s - 1], k)) return s;
  }
}

/* Rebuild the index over v, merging cells with equal keys (the carries
   follow their cells to their new indices). */
static void reindex(lifecube *q, size_t nslots)
{
  free(q->slot);
  q->nslots = nslots;
  q->slot = xcalloc(nslots, sizeof *q->slot);
  u64map old = q->carry;
  u64map_init(&q->carry, 16);
  size_t n = 0;
  for (size_t i = 0; i < q->n; i++) {
    lifecube_cell c = q->v[i];
    uint32_t *s = find(q, &c);
    size_t at;
    if (*s) {
      at = *s - 1;
      q->v[at].objects += c.objects;
    } else {
      at = n;
      q->v[at] = c;
      memset(q->v[at].count, 0, sizeof q->v[at].count);
      *s = (uint32_t)++n;
    }
    for (unsigned k = 0; k < 3; k++) {
      uint32_t *hi = old.count ? u64map_get(&old, 3 * (uint64_t)i + k) : NULL;
      count_add(&q->carry, &q->v[at], at, k, (uint64_t)(hi ? *hi : 0) << 32 | c.count[k]);
    }
  }
  u64map_free(&old);
  q->n = n;
}

void lifecube_init(lifecube *q, uint32_t nbins, uint64_t width)
{
  memset(q, 0, sizeof *q);
  q->nbins = nbins;
  q->width = width;
  q->nslots = 1024;
  q->slot = xcalloc(q->nslots, sizeof *q->slot);
  u64map_init(&q->carry, 16);
}

void lifecube_free(lifecube *q)
{
  free(q->v);
  free(q->slot);
  u64map_free(&q->carry);
  memset(q, 0, sizeof *q);
}

static uint64_t bins_key(uint32_t abin, uint32_t dbin)
{
  return (uint64_t)abin << LC_ABIN | (uint64_t)dbin << LC_DBIN;
}

void lifecube_cover(lifecube *q, uint64_t t)
{
  if (t / q->width < q->nbins) return;
  const uint64_t bins = bins_key((1u << LC_BINBITS) - 1, (1u << LC_BINBITS) - 1);
  while (t / q->width >= q->nbins) {
    q->width *= 2;
    for (size_t i = 0; i < q->n; i++) {
      lifecube_cell *c = &q->v[i];
      uint32_t abin = lifecube_abin(c) / 2, dbin = lifecube_dbin(c);
      if (dbin != q->nbins) dbin /= 2;
      c->key = (c->key & ~bins) | bins_key(abin, dbin);
    }
  }
  reindex(q, q->nslots);
}

void lifecube_add(lifecube *q, const an_sample *s, uint32_t word_bytes, uint64_t end, uint16_t proc)
{
  uint64_t death = s->t_collect == AN_NEVER ? end : s->t_collect;
  lifecube_cover(q, s->t_alloc);
  if (s->t_collect != AN_NEVER) lifecube_cover(q, s->t_collect);
  lifecube_cell k;
  memset(&k, 0, sizeof k);
  k.node = s->node;
  k.key = bins_key((uint32_t)(s->t_alloc / q->width),
                   s->t_collect == AN_NEVER ? q->nbins : (uint32_t)(s->t_collect / q->width))
          | (uint64_t)(s->domain > LIFECUBE_MAXDOM ? LIFECUBE_MAXDOM : s->domain) << LC_DOM
          | (uint64_t)lifecube_size_class(s->wosize * word_bytes) << LC_SIZE
          | (uint64_t)lifecube_life_class(death >= s->t_alloc ? death - s->t_alloc : 0) << LC_LIFE
          | (uint64_t)proc << LC_PROC;
  uint32_t *slot = find(q, &k);
  if (!*slot) {
    grow_array((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v);
    q->v[q->n] = k;
    *slot = (uint32_t)++q->n;
    if (4 * q->n > 3 * q->nslots) {
      reindex(q, q->nslots * 2);
      slot = find(q, &k);
    }
  }
  size_t i = *slot - 1;
  lifecube_cell *c = &q->v[i];
  count_add(&q->carry, c, i, LC_SAMPLES, s->nsamples);
  count_add(&q->carry, c, i, LC_BLOCKS, 1);
  c->objects += s->nsamples / (double)(s->wosize + 1);
  if (s->promoted) count_add(&q->carry, c, i, LC_PROMOTED, s->nsamples);
}

/* lifecube.c: see lifecube.h.  The table of indices is rebuilt after a
   bin doubling (cells merge) and when it is half full. */

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
  uint64_t a = (uint64_t)k->node << 32 | (uint64_t)k->abin << 16 | k->dbin;
  uint64_t b = (uint64_t)k->proc << 24 | (uint64_t)k->dom << 16 | (uint64_t)k->size << 8 | k->life;
  return mix64(a ^ mix64(b + 0x9E3779B97F4A7C15ULL));
}

static int same_key(const lifecube_cell *x, const lifecube_cell *y)
{
  return x->node == y->node && x->abin == y->abin && x->dbin == y->dbin && x->dom == y->dom
         && x->size == y->size && x->life == y->life && x->proc == y->proc;
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

/* Rebuild the index over v, merging cells with equal keys. */
static void reindex(lifecube *q, size_t nslots)
{
  free(q->slot);
  q->nslots = nslots;
  q->slot = xcalloc(nslots, sizeof *q->slot);
  size_t n = 0;
  for (size_t i = 0; i < q->n; i++) {
    lifecube_cell *c = &q->v[i];
    uint32_t *s = find(q, c);
    if (*s) {
      lifecube_cell *d = &q->v[*s - 1];
      d->samples += c->samples; d->blocks += c->blocks;
      d->promoted += c->promoted; d->objects += c->objects;
    } else {
      q->v[n] = *c;
      *s = (uint32_t)++n;
    }
  }
  q->n = n;
}

void lifecube_init(lifecube *q, uint32_t nbins, uint64_t width)
{
  memset(q, 0, sizeof *q);
  q->nbins = nbins;
  q->width = width;
  q->nslots = 1024;
  q->slot = xcalloc(q->nslots, sizeof *q->slot);
}

void lifecube_free(lifecube *q)
{
  free(q->v);
  free(q->slot);
  memset(q, 0, sizeof *q);
}

void lifecube_cover(lifecube *q, uint64_t t)
{
  if (t / q->width < q->nbins) return;
  while (t / q->width >= q->nbins) {
    q->width *= 2;
    for (size_t i = 0; i < q->n; i++) {
      q->v[i].abin /= 2;
      if (q->v[i].dbin != q->nbins) q->v[i].dbin /= 2;
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
  k.abin = (uint16_t)(s->t_alloc / q->width);
  k.dbin = (uint16_t)(s->t_collect == AN_NEVER ? q->nbins : s->t_collect / q->width);
  k.dom = (uint8_t)(s->domain > LIFECUBE_MAXDOM ? LIFECUBE_MAXDOM : s->domain);
  k.size = (uint8_t)lifecube_size_class(s->wosize * word_bytes);
  k.life = (uint8_t)lifecube_life_class(death >= s->t_alloc ? death - s->t_alloc : 0);
  k.proc = proc;
  uint32_t *slot = find(q, &k);
  if (!*slot) {
    grow_array((void **)&q->v, &q->cap, q->n + 1, sizeof *q->v);
    q->v[q->n] = k;
    *slot = (uint32_t)++q->n;
    if (2 * q->n > q->nslots) {
      reindex(q, q->nslots * 2);
      slot = find(q, &k);
    }
  }
  lifecube_cell *c = &q->v[*slot - 1];
  c->samples += s->nsamples;
  c->blocks++;
  c->objects += s->nsamples / (double)(s->wosize + 1);
  if (s->promoted) c->promoted += s->nsamples;
}

/* snapdeath.c: the sampled blocks a heap snapshot proves dead (see
   snapdeath.h).  The ids of a snapshot's sampled blocks are gathered from
   its BLOCK records and dropped when the next snapshot begins; those of a
   swept snapshot at its end, from the blocks its roots reach. */

#include <stdlib.h>
#include <string.h>

#include "snapdeath.h"

static void swept_free(snapdeath *d)
{
  free(d->roots); free(d->blk); free(d->off); free(d->adj); free(d->samples);
  d->roots = d->blk = d->off = d->adj = NULL;
  d->samples = NULL;
  d->nroots = d->roots_cap = d->nblk = d->blk_cap = d->off_cap = 0;
  d->nadj = d->adj_cap = d->nsamples = d->samples_cap = 0;
  d->swept = d->too_big = 0;
}

static void swept_edges(snapdeath *d, const mpt_event *ev)
{
  if (d->too_big) return;
  if (d->nadj + ev->snap.nedges > UINT32_MAX) { d->too_big = 1; return; }
  grow_array((void **)&d->adj, &d->adj_cap, d->nadj + ev->snap.nedges, sizeof *d->adj);
  for (uint32_t i = 0; i < ev->snap.nedges; i++)
    d->adj[d->nadj++] = (uint32_t)ev->snap.edges[i];
}

static void swept_block(snapdeath *d, const mpt_event *ev)
{
  grow_array((void **)&d->blk, &d->blk_cap, d->nblk + 1, sizeof *d->blk);
  grow_array((void **)&d->off, &d->off_cap, d->nblk + 2, sizeof *d->off);
  d->blk[d->nblk] = (uint32_t)ev->snap.block;
  d->off[d->nblk] = (uint32_t)d->nadj;
  if (ev->snap.sample_id) {
    grow_array((void **)&d->samples, &d->samples_cap, d->nsamples + 1, sizeof *d->samples);
    d->samples[d->nsamples++] = (struct sd_sample){ (uint32_t)d->nblk, ev->snap.sample_id };
  }
  d->nblk++;
  swept_edges(d, ev);
}

/* At the end of a swept snapshot: present = the samples of the blocks
   its roots reach. */
static void swept_present(snapdeath *d)
{
  if (d->too_big) {
    for (size_t i = 0; i < d->nsamples; i++) u64map_put(&d->present, d->samples[i].id, 1);
    return;
  }
  d->off[d->nblk] = (uint32_t)d->nadj;
  id_index blocks;                      /* ids to 1 + block indices */
  id_index_init(&blocks, d->blk, d->nblk);
  uint8_t *seen = xcalloc(d->nblk ? d->nblk : 1, 1);
  uint32_t *stack = xmalloc((d->nblk ? d->nblk : 1) * sizeof *stack);
  size_t sp = 0;
  for (size_t i = 0; i < d->nroots; i++) {
    uint32_t b = id_index_find(&blocks, d->roots[i]);
    if (b && !seen[b - 1]) { seen[b - 1] = 1; stack[sp++] = b - 1; }
  }
  while (sp) {
    uint32_t v = stack[--sp];
    for (uint32_t e = d->off[v]; e < d->off[v + 1]; e++) {
      uint32_t b = id_index_find(&blocks, d->adj[e]);
      if (b && !seen[b - 1]) { seen[b - 1] = 1; stack[sp++] = b - 1; }
    }
  }
  for (size_t i = 0; i < d->nsamples; i++)
    if (seen[d->samples[i].blk]) u64map_put(&d->present, d->samples[i].id, 1);
  id_index_free(&blocks);
  free(seen); free(stack);
}

void sd_init(snapdeath *d)
{
  memset(d, 0, sizeof *d);
  u64map_init(&d->present, 64);
  u64map_init(&d->dead, 64);
}

void sd_free(snapdeath *d)
{
  swept_free(d);
  if (d->present.e) u64map_free(&d->present);
  if (d->dead.e) u64map_free(&d->dead);
  memset(d, 0, sizeof *d);
}

int sd_event(snapdeath *d, const mpt_event *ev)
{
  switch (ev->kind) {
  case MPT_EV_SNAP_BEGIN:
    u64map_free(&d->present);
    u64map_init(&d->present, 1024);
    swept_free(d);
    d->open = 1;
    d->time_ns = ev->time_ns;
    return 0;
  case MPT_EV_SNAP_IDS:
    if (d->open) d->swept = 1;
    return 0;
  case MPT_EV_SNAP_ROOT:
    if (d->open && d->swept) {
      grow_array((void **)&d->roots, &d->roots_cap, d->nroots + 1, sizeof *d->roots);
      d->roots[d->nroots++] = (uint32_t)ev->snap.target;
    }
    return 0;
  case MPT_EV_SNAP_BLOCK:
    if (d->open && d->swept) swept_block(d, ev);
    else if (d->open && ev->snap.sample_id) u64map_put(&d->present, ev->snap.sample_id, 1);
    return 0;
  case MPT_EV_SNAP_EDGES:
    if (d->open && d->swept && d->nblk) swept_edges(d, ev);
    return 0;
  case MPT_EV_SNAP_END:
    if (!d->open) return 0;
    d->open = 0;
    if (d->swept) { swept_present(d); swept_free(d); }
    return !(ev->snap.flags & MPT_SNAP_INCOMPLETE);
  default:
    return 0;
  }
}

int sd_in_snapshot(const snapdeath *d, uint64_t id)
{
  return u64map_get(&d->present, id) != NULL;
}

void sd_mark_dead(snapdeath *d, uint64_t id)
{
  u64map_put(&d->dead, id, 1);
}

int sd_collected(snapdeath *d, uint64_t id)
{
  return u64map_del(&d->dead, id, NULL);
}

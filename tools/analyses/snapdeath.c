/* snapdeath.c: the sampled blocks a heap snapshot proves dead (see
   snapdeath.h).  The ids of a snapshot's sampled blocks are gathered from
   its BLOCK records and dropped when the next snapshot begins. */

#include <string.h>

#include "snapdeath.h"

void sd_init(snapdeath *d)
{
  memset(d, 0, sizeof *d);
  u64map_init(&d->present, 64);
  u64map_init(&d->dead, 64);
}

void sd_free(snapdeath *d)
{
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
    d->open = 1;
    d->time_ns = ev->time_ns;
    return 0;
  case MPT_EV_SNAP_BLOCK:
    if (d->open && ev->snap.sample_id) u64map_put(&d->present, ev->snap.sample_id, 1);
    return 0;
  case MPT_EV_SNAP_END:
    if (!d->open) return 0;
    d->open = 0;
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

/* snapdeath.h: the sampled blocks a heap snapshot proves dead.

   A sampled block counts as live until its COLLECT event, which the
   runtime writes when the block is swept: for a major block, up to a
   whole major cycle after it became unreachable, so the estimated live
   heap runs above the real one.  A heap snapshot, taken at the end of a
   major cycle, lists every reachable block (strongly or through weak
   references) with the allocation id of the sampled ones.  So a sample
   allocated before the snapshot, not yet collected and absent from a
   complete snapshot was unreachable then: it is dead from the snapshot's
   time on.  The analysis (analysis.c) feeds every event to sd_event; at
   the end of a complete snapshot it completes those samples at the
   snapshot's time, and their COLLECT events, which still come, are
   expected rather than unknown.

   A swept snapshot (explicit ids, memprof_snapshot_sweep=1) also writes
   blocks that no root reaches but the GC had not freed yet (dead since
   the cycle began, or allocated during it and dropped): its graph is kept
   while it is read (4 bytes per id, block and edge), and only the sampled
   blocks its roots reach, strongly or through weak references, count as
   present.

   Not concluded dead: samples of out-of-heap memory (source custom),
   since the snapshot names a block by one sample id and a custom block
   can carry two samples (its words and its outside memory); samples of
   a snapshot cut short or that ran out of memory (blocks missing).

   Memory: one map entry per sampled block of the snapshot being read,
   and one per sample concluded dead whose COLLECT has not come yet. */

#ifndef OCAML_MEMPROF_SNAPDEATH_H
#define OCAML_MEMPROF_SNAPDEATH_H

#include <stdint.h>

#include "trace_input.h"
#include "util.h"

typedef struct {
  int open;                     /* inside a snapshot's records */
  uint64_t time_ns;             /* the snapshot's start */
  u64map present;               /* sample ids of its blocks */
  u64map dead;                  /* concluded dead, COLLECT to come */
  /* a swept snapshot's graph, while it is read (see above) */
  int swept;
  uint32_t *roots; size_t nroots, roots_cap;   /* target ids */
  uint32_t *blk; size_t nblk, blk_cap;         /* block ids, increasing */
  uint32_t *off; size_t off_cap;               /* nblk + 1 edge offsets */
  uint32_t *adj; size_t nadj, adj_cap;         /* target ids */
  struct sd_sample { uint32_t blk; uint64_t id; } *samples;
  size_t nsamples, samples_cap;
  int too_big;                  /* 2^32 edges: every sample counts */
} snapdeath;

void sd_init(snapdeath *d);
void sd_free(snapdeath *d);

/* Follow one event of the trace.  1 at the end of a complete snapshot:
   until the next call, sd_in_snapshot answers for it and d->time_ns is
   its time. */
int sd_event(snapdeath *d, const mpt_event *ev);

/* Is the sample [id] a block of the snapshot just ended? */
int sd_in_snapshot(const snapdeath *d, uint64_t id);

/* Sample [id] was completed as dead at the snapshot. */
void sd_mark_dead(snapdeath *d, uint64_t id);

/* A COLLECT of [id] not in the live table: 1 if it had been concluded
   dead at a snapshot (then forgotten), 0 if unknown. */
int sd_collected(snapdeath *d, uint64_t id);

#endif

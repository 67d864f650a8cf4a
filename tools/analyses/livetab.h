/* livetab.h: the samples still live while a trace is read, by block id.

   Memory is the point: a long-running program keeps millions of sampled
   blocks alive, and each costs one record here until it is collected.
   - A record (an_live) is 20 bytes: node, samples, size and allocation
     time packed (time to the ns up to 2^48 ns = 78 h, size up to 2^32-1
     words, both saturating; domain up to 8191).
   - Ids are handed out in sequence and most blocks die young: ids within a
     window of LIVETAB_WINDOW ending near the largest id seen sit in a
     direct-mapped ring of records (no hashing, no per-entry key).
   - When the window moves on, survivors leave the ring in id order and are
     appended to their domain's *run*: an array of (id, record), 28 bytes
     each, sorted by id, found by binary search; a collection leaves a
     hole, and a run is compacted (from its first hole) when an eighth of
     it is holes.
   - A block allocated below the window goes to its domain's run too.  That
     is the common case with several domains, not an accident: the runtime
     hands each domain its ids in blocks of 256 and writes each domain's
     events in 256 KiB chunks, so a domain's chunk comes long after other
     domains' chunks have moved the window past its ids; but within one
     domain's stream ids only grow, so they still arrive in its run's
     order.  (One shared sorted array took them for strays: a hash map
     costing 100 bytes and more a block, half the live blocks of a
     two-domain runtime trace.)
   - A promotion or collection looks in the window, then in its own
     domain's run (the runtime records a block's fate in the stream that
     allocated it), then in the other runs.
   - The rare id that fits no run (it goes backwards in its domain's
     stream: hostile files) goes to a hash map.
   So a live sample costs 28 to 32 bytes once old, 20 while young.  Runs
   grow by half, and the part of an array not yet written is never
   touched, so it takes address space but no memory. */

#ifndef OCAML_MEMPROF_LIVETAB_H
#define OCAML_MEMPROF_LIVETAB_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

#define LIVETAB_WINDOW (1u << 16)
/* Domains (streams) with a run of their own; later ones share the last. */
#define LIVETAB_RUNS 256

typedef struct {
  uint32_t node;               /* bit 31: promoted */
  uint32_t nsamples;           /* 0 = free */
  uint32_t wosize;             /* saturated */
  uint32_t t_lo;               /* t_alloc, low 32 bits */
  uint32_t t_hi;               /* t_alloc bits 32-47 | source << 16 | domain << 19 */
} an_live;

typedef struct {
  uint32_t id_lo, id_hi;
  an_live r;
} an_live_old;

/* One domain's blocks that left the window (or arrived below it). */
typedef struct {
  an_live_old *v;              /* sorted by id; holes have r.nsamples 0 */
  size_t n, cap, holes;
  size_t first_hole;           /* index of the first hole, when holes */
} livetab_run;

typedef struct {
  an_live *ring;
  uint64_t *bits;              /* occupied ring slots */
  uint64_t base;
  size_t ring_count;
  livetab_run *runs;           /* by domain, up to LIVETAB_RUNS */
  size_t nruns;
  an_live *stray;              /* in no run's order */
  size_t nstray, stray_cap;
  uint32_t *stray_free;
  size_t nstray_free, stray_free_cap;
  u64map stray_idx;            /* id -> index in stray */
} livetab;

void livetab_init(livetab *t);
void livetab_free(livetab *t);
/* [domain] is the stream of the event that names [id]: where to look
   first, and for livetab_put the domain the record will be packed with.
   Record of [id], or NULL. */
an_live *livetab_get(livetab *t, uint64_t id, uint32_t domain);
/* Slot for [id] (to be filled by the caller, with [domain]); *had tells
   whether [id] was present (its record is then overwritten).  An id below
   the window is looked for in [domain]'s run and the stray map only: an
   id allocated by two domains is then not seen as allocated twice. */
an_live *livetab_put(livetab *t, uint64_t id, uint32_t domain, int *had);
/* Remove [id]: 1 and its record in *out, or 0. */
int livetab_del(livetab *t, uint64_t id, uint32_t domain, an_live *out);
/* Call [f] on every record with its id: the ring's, then the runs' merged
   in id order, then the strays. */
void livetab_each(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u);
/* As livetab_each, then empty the table; the runs shrink while they are
   walked, so the records' memory goes back while [f] builds what it
   builds from them (the report's cells: 1.74 M for 3.67 M live samples). */
void livetab_drain(livetab *t, void (*f)(void *u, uint64_t id, const an_live *r), void *u);

/* Packing. */
static inline void an_live_pack(an_live *r, uint32_t node, uint32_t nsamples, uint64_t wosize,
                                uint64_t t_alloc, unsigned source, uint32_t domain)
{
  const uint64_t tmax = ((uint64_t)1 << 48) - 1;
  if (t_alloc > tmax) t_alloc = tmax;
  r->node = node & 0x7FFFFFFFu;
  r->nsamples = nsamples;
  r->wosize = wosize > UINT32_MAX ? UINT32_MAX : (uint32_t)wosize;
  r->t_lo = (uint32_t)t_alloc;
  r->t_hi = (uint32_t)(t_alloc >> 32) | (source & 7u) << 16 | (domain > 8191 ? 8191 : domain) << 19;
}
static inline uint64_t an_live_time(const an_live *r)
{ return (uint64_t)(r->t_hi & 0xFFFF) << 32 | r->t_lo; }
static inline unsigned an_live_source(const an_live *r) { return r->t_hi >> 16 & 7; }
static inline uint32_t an_live_domain(const an_live *r) { return r->t_hi >> 19; }
static inline uint32_t an_live_node(const an_live *r) { return r->node & 0x7FFFFFFFu; }
static inline int an_live_promoted(const an_live *r) { return r->node >> 31; }

#endif

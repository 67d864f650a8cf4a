/* memprof_tracer_domain.h: the 5.x+memprof tracer's per-domain state,
   shared by its two sample paths: memprof_tracer.c (everything) and
   memprof_trap.c (the sample trap, compiled for the general registers
   only, see CAML_MEMPROF_TRAP).  Internal to those two files.

   Contracts
   - A tracer_domain is used by its domain under its lock (stream_lock),
     taken also by whoever stops or flushes the trace; the fields that
     describe the stream (gen, buf, the encoder, the tables) change only
     under it.
   - The inline functions here compile in either file; none calls out. */

#ifndef CAML_MEMPROF_TRACER_DOMAIN_H
#define CAML_MEMPROF_TRACER_DOMAIN_H

#ifdef CAML_INTERNALS

#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include "camlatomic.h"
#include "domain_state.h"
#include "minor_gc.h"
#include "memprof_callstack.h"
#include "memprof_trace_codec.h"

#define GEOM_LANES 64             /* independent generators, one a lane  */
/* Gaps drawn at once: four rounds of the lanes.  The sample trap cannot
   draw (logarithms take vector registers): a sample that finds the batch
   used up goes the ordinary way, about 800 instructions more, so once
   per 64 samples was 13 instructions per sample on shallow_rec in
   bench/ (callgrind, 1e-3). */
#define GEOM_BATCH (4 * GEOM_LANES)

/* Tracing is on (memprof_tracer.c's start and stop), and the trace file's
   generation: a stream whose state is for an older one resets first. */
extern atomic_int caml_memprof_tracer_active;
extern atomic_uintnat caml_memprof_tracer_generation;

typedef struct { value block; uint64_t id; } entry;
typedef struct { entry *t; size_t len, cap; } entry_table;

typedef struct { uintnat key; uint32_t id; } loc_slot;
typedef struct { const char *key; uint32_t id; } str_slot;

typedef struct tracer_domain {
  atomic_int lock;                /* stream_lock / stream_unlock       */
  caml_domain_state *state;       /* the domain using the slot, or NULL */
  uint16_t stream;
  uintnat gen;                    /* generation the stream state is for */
  /* The generation for which the sample trap may take this stream's
     samples: its state and its batch of gaps are for that trace, and it
     never packs frames (and its buffers exist: gen is set only once
     they do); (uintnat)-1 otherwise.  One compare on the trap's path
     instead of four (update_quick_gen). */
  uintnat quick_gen;
  /* encoding */
  mpt_encoder enc;
  uint8_t *buf;                   /* 8-byte chunk header slot + body     */
  int small_ticks;                /* flusher ticks passed while the buffer
                                     held few events (flush_streams)   */
  uint8_t *zbuf; size_t zcap;
  mpt_frame_state *zstate;        /* kept from one frame to the next    */
  uint32_t *enc_stack;
  uint64_t last_stats;            /* last MAJOR_CYCLE event, time units   */
  uint64_t samples_at_stats;      /* [samples] then                       */
  /* location and string tables */
  loc_slot *locs; uint32_t loc_cap, loc_used, loc_count; /* count: ids */
  str_slot *strs; uint32_t str_cap, str_used, str_count; /* count: ids */
  /* callstacks */
  caml_memprof_callstack_cache frames; /* return address -> size, location */
  uintnat code_releases;          /* code_releases when the tables were
                                     last emptied of code addresses     */
  uint32_t *ids;                  /* this sample's location ids          */
  int verify;                     /* memprof_verify=1 (see trap_capture) */
  /* memprof_verify=1: the trap's last capture, which it leaves to the
     ordinary path to verify (the trap returns 0 after its sample, and
     caml_memprof_tracer_sample_fast, called next by caml_garbage_
     collection, finds it pending, verifies it and returns 1) */
  int trap_capture_pending;
  caml_memprof_capture trap_capture;
  ptrdiff_t trap_alloc_idx;
  uint32_t *ref_ids;              /* memprof_verify=1: upstream's walk's  */
  int ref_len;                    /*   stack, and its length              */
  uint32_t *cb_ids;               /* memprof_callbacks: the stack with its
                                     callback frames                     */
  /* The trap's sample in progress, kept here across the capture (inlined
     in the trap, which then needs every register). */
  struct {
    uint64_t now;
    intnat alloc_ofs, trigger_ofs;
    uintnat wosize, nsamples;
    int gap;
  } trap;
  /* sampling */
  uint32_t rng[4][GEOM_LANES];    /* xoshiro128+ states, one per lane  */
  float geom_scratch[GEOM_BATCH];
  uintnat geom[GEOM_BATCH];       /* gaps drawn, geom[geom_next...] unused */
  int geom_next;
  uintnat geom_gen;               /* the trace (generation) they are for */
  int trigger_valid;
  value *trigger_drawn_at;        /* young_ptr when the trigger was drawn */
  uintnat trigger_minor;          /* caml_minor_collections_count then  */
  /* parked while upstream's statmemprof is suspended (see
     caml_memprof_tracer_statmemprof_suspended) */
  int parked;
  intnat park_gap;                /* trigger - young_ptr when parked     */
  int unparked;                   /* since caml_memprof_tracer_before_... */
  uintnat countdown;              /* words to the next non-minor sample   */
  uintnat countdown_gen;
  /* identities */
  uint64_t next_id, id_end;
  /* tracked blocks */
  entry_table young, major;
  uint64_t samples, lost;
} tracer_domain;

/* The sample point T is kept in the domain state one byte below where it
   is: memprof_tracer_trigger = T - 1 byte.  young_ptr is word-aligned, so
   an allocation still leaves the fast path exactly when young_ptr goes
   below T, but a poll (which traps when young_ptr <= young_limit, where an
   allocation traps when young_ptr < young_limit) no longer traps when an
   unsampled allocation has ended exactly at T: otherwise every poll
   would then trap, for nothing, until the next allocation (seven per
   sample on a loop allocating every 32 iterations).  The field is only
   compared, never dereferenced. */
static inline value *trigger_get(caml_domain_state *s)
{
  return (value *)((char *)s->memprof_tracer_trigger + 1);
}

static inline void trigger_set(caml_domain_state *s, value *t)
{
  s->memprof_tracer_trigger = (value *)((char *)t - 1);
}

static inline void trigger_drawn(caml_domain_state *s, tracer_domain *d)
{
  d->trigger_valid = 1;
  d->trigger_drawn_at = s->young_ptr;
  d->trigger_minor = atomic_load_relaxed(&caml_minor_collections_count);
}

/* Object ids: each domain takes them from a global counter in blocks of
   ID_BLOCK (memprof_tracer.c's), so that a sample's id costs no atomic
   operation; the next block is one atomic add, which the trap may do too
   (a lock-prefixed instruction, no call). */
#define ID_BLOCK 256
extern _Atomic uint64_t caml_memprof_tracer_next_id_block;
static inline uint64_t fresh_id(tracer_domain *d)
{
  if (d->next_id == d->id_end) {
    d->next_id = atomic_fetch_add(&caml_memprof_tracer_next_id_block, ID_BLOCK);
    d->id_end = d->next_id + ID_BLOCK;
  }
  return d->next_id++;
}

/* The room a sample asks of the event buffer: its ALLOC with the longest
   stack the stream captures.  Both sample paths ask the same, so that the
   ordinary path flushes the buffer where the trap (which cannot) stops. */
static inline size_t sample_room(tracer_domain *d)
{
  /* + the callback frames (memprof_callbacks.h's 8 at most) */
  return MPT_MAX_EVENT_BYTES(d->frames.max + 8);
}

/* Whether the tracer's sample point is the only reason the allocation
   just performed at young_ptr left the allocation fast path: no
   interrupt (every request from another thread or a signal handler stores
   UINTNAT_MAX in young_limit), no GC request, the block fits in the minor
   heap and statmemprof does not sample it.  The sample can then be taken
   without caml_alloc_small_dispatch's round trip.
   A pending action alone (action_pending without an interrupt, which
   caml_reset_young_limit sets after every collection so that callbacks
   are looked for) is left for the next allocation that leaves the fast
   path for another reason, as in a program run without the tracer, whose
   young_limit is the same but for our sample point: that point is not a
   poll of its own.  It was one until this was noticed: the first sample
   after most collections took the ordinary path, a quarter of those that
   did on short_lived in bench/ (246 of 485). */
static inline int only_the_sample_point(caml_domain_state *s,
                                        tracer_domain *d)
{
  return d != NULL
    && s->young_ptr < s->memprof_tracer_trigger
    && s->young_ptr >= s->young_trigger
    && s->young_ptr >= s->memprof_young_trigger
    && !s->requested_minor_gc
    && !s->requested_major_slice
    && atomic_load_relaxed(&s->young_limit) != CAML_UINTNAT_MAX
    && !d->parked && atomic_load_relaxed(&caml_memprof_tracer_active);
}

/* young_limit after a sample taken that way: the highest trigger, set by
   us rather than by caml_reset_young_limit, which would also flag an
   action pending (and so send the next sample down the slow path); an
   interrupt that arrived meanwhile is not lost: the exchange returns its
   UINTNAT_MAX, which we put back. */
static inline __attribute__((always_inline)) void
reset_young_limit_after_sample(caml_domain_state *s)
{
  value *limit = s->young_trigger > s->memprof_young_trigger
    ? s->young_trigger : s->memprof_young_trigger;
  if (s->memprof_tracer_trigger > limit) limit = s->memprof_tracer_trigger;
  if (atomic_exchange(&s->young_limit, (uintnat)limit) == CAML_UINTNAT_MAX)
    atomic_store(&s->young_limit, CAML_UINTNAT_MAX);
}

/* The per-stream lock: a test-and-set lock, since it is almost never
   contended (only stop/flush/exit from another thread take it) and a
   pthread mutex costs several times more per sample.  Holders never block
   on anything but the writer's mutex. */
static inline void stream_lock(tracer_domain *d)
{
  while (atomic_exchange_explicit(&d->lock, 1, memory_order_acquire))
    while (atomic_load_explicit(&d->lock, memory_order_relaxed)) sched_yield();
}

static inline void stream_unlock(tracer_domain *d)
{
  atomic_store_explicit(&d->lock, 0, memory_order_release);
}

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_TRACER_DOMAIN_H */

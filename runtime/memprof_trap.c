/* memprof_trap.c: the sample trap of the 5.x+memprof tracer (amd64 Linux).

   Why
   A sample from an OCaml allocation used to cost, before any tracing
   work, upstream's whole trip out of OCaml code: caml_call_gc saves and
   restores every register (29 words, vector registers included), then
   caml_garbage_collection looks up the frame descriptor to size the
   allocation and calls the tracer.  About 120 instructions of a sample's
   900.  When our sample point is all that brought the allocation there,
   none of that is needed: nothing runs that could move or inspect OCaml
   values.

   How
   MEMPROF_TRAP_ENTRY (memprof_trap.h), expanded at the start of
   caml_call_gc, compares young_ptr with our sample point, saves the nine
   registers C may clobber (not the vector ones) on the C stack and
   calls caml_memprof_tracer_trap on the C stack.  The trap takes the
   sample the way memprof_tracer.c's sample_fast does (same conditions,
   same sub-block search and geometric gaps, same record), but only when
   everything it needs is at hand, so that it calls nothing that could
   use other registers or block:
   - the allocation's lengths, cached per return address in the stream's
     callstack cache by the ordinary path (caml_memprof_callstack_note_
     alloc) instead of a frame-descriptor lookup;
   - a stack of cached frames that the fast capture walks to a match with
     the previous capture (caml_memprof_callstack_walk, inlined here:
     memprof_callstack_walk.h);
   - gaps left in the batch, room in the buffer and the tracked table,
     a clock read without the C library (the TSC, or where the kernel
     keeps time otherwise, CLOCK_MONOTONIC through the vDSO or the
     system call: memprof_trace_writer.h), the stream lock free, the
     stream's state current, and a stream that never packs frames (rates
     from 1e-4 up; packing calls out).
   Otherwise it returns 0 before changing anything (the gaps it drew are
   put back, the lock released), and caml_call_gc goes on as upstream's:
   the ordinary path then takes the same sample with the same gaps, so
   which blocks are sampled does not depend on the path.
   Allocations from C (Alloc_small, caml_alloc_small_dispatch's flags
   CAML_DO_TRACK alone) take the same quick sample from caml_memprof_
   tracer_sample_fast (caml_memprof_tracer_sample_c): one block at
   young_ptr, the stack of the OCaml code that called C; the caml_call_gc
   entry is not involved, but the same code serves both.  On leaky_server,
   whose third of samples come from C (Printf, Bytes), that saved about
   20 instructions per sample (callgrind at 1e-3).
   With memprof_verify=1 the trap takes the sample, then returns 0: the
   ordinary path's first hook (caml_memprof_tracer_sample_fast) compares
   the stack it captured with upstream's and returns at once, leaving the
   block where it is; after a sample from C, sample_fast compares at once.

   The general registers only
   This file (with the walk of memprof_callstack_walk.h and the writer's
   TSC clock, inlined) and the ALLOC encoders of memprof_trace_codec.c
   (in the runtime) are compiled with GCC's target("general-regs-only");
   the trap calls nothing else (testsuite/trap_registers.py reads the
   disassembly of everything it can reach; trap_floats.ml keeps floats in
   vector registers across sampled allocations).

   Synchronisation
   As every sample: the stream lock, taken here by trylock (a contended
   lock is someone stopping or flushing the trace: the ordinary path
   waits for it).  The callstack cache is used only by the domain that
   owns the stream, under that lock. */

#define CAML_INTERNALS
#include "caml/memprof_tracer.h"

#ifdef CAML_MEMPROF_TRAP

#pragma GCC target("general-regs-only")

#include <stdatomic.h>
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/frame_descriptors.h"
#include "caml/memprof_callstack.h"
#include "caml/memprof_callstack_walk.h"
#include "caml/memprof_trace_codec.h"
#include "caml/memprof_trace_writer.h"
#include "caml/memprof_tracer_domain.h"
#include "caml/stack.h"

/* The stream, ready for a quick sample: the sample point is all that is
   due, the lock is free (taken here), the stream's state is current, it
   never packs frames (packing calls out), and the TSC clock is ready
   (the sample's time in [*now]).  0 otherwise, nothing changed. */
static inline __attribute__((always_inline)) int
stream_ready(caml_domain_state *s, tracer_domain *d, uint64_t *now)
{
  if (!only_the_sample_point(s, d)
      || atomic_exchange_explicit(&d->lock, 1, memory_order_acquire))
    return 0;
  if (d->quick_gen == atomic_load(&caml_memprof_tracer_generation)
      && caml_trace_writer_now_direct(now))
    return 1;
  stream_unlock(d);
  return 0;
}

/* The sample points in the (sub-)block at young_ptr + [alloc_ofs] of
   [wosize], the first at young_ptr + [trigger_ofs], from the batch's
   gaps; 0, having changed nothing, when the batch runs out, when a point
   falls in a lower sub-block, or without room for the record (from there
   on the sample is taken).  Else the sample, and the next point, are
   parked in d->trap for capture_and_record. */
static inline __attribute__((always_inline)) int
park_sample(tracer_domain *d, uint64_t now, intnat alloc_ofs, uintnat wosize,
            intnat trigger_ofs)
{
  int gap = d->geom_next;
  uintnat nsamples = 0;
  do {
    if (gap == GEOM_BATCH) return 0;
    nsamples++;
    trigger_ofs -= (intnat)d->geom[gap++];
  } while (alloc_ofs < trigger_ofs);
  if (trigger_ofs > 0) return 0;
  if (mpt_enc_space(&d->enc) < sample_room(d)) return 0;
  if (d->young.len == d->young.cap) return 0;
  d->trap.now = now;
  d->trap.alloc_ofs = alloc_ofs;
  d->trap.trigger_ofs = trigger_ofs;
  d->trap.wosize = wosize;
  d->trap.nsamples = nsamples;
  d->trap.gap = gap;
  return 1;
}

/* The rest of a quick sample, once its block and gaps are found and
   parked in d->trap (the capture, inlined, needs every register): the
   capture, the record, the next sample point.  Called with the lock;
   releases it.  Returns 0 when the stack needs the ordinary capture
   (nothing changed), else 1, or 2 with memprof_verify=1 (the stack is
   left to verify: trap_capture_pending). */
static inline __attribute__((always_inline)) int
capture_and_record(caml_domain_state *s, tracer_domain *d, ptrdiff_t alloc_idx)
{
  d->trap_alloc_idx = alloc_idx;
  caml_memprof_capture cap =
    caml_memprof_callstack_walk(&d->frames, s->current_stack, alloc_idx, 1);
  /* s and d are not kept across the walk either: taken again (the same). */
  s = Caml_state;
  d = s->memprof_tracer;
  if (cap.n < 0) {                   /* CALLSTACK_SLOW: nothing changed */
    stream_unlock(d);
    return 0;
  }
  uint64_t id = fresh_id(d);
  entry *tracked = &d->young.t[d->young.len++];
  tracked->block = Val_hp(s->young_ptr + d->trap.alloc_ofs);
  tracked->id = id;
  /* The stack: the frames captured, followed by cap.common frames of the
     encoder's previous stack, or, where the walk did not meet the
     previous capture, the whole stack, whose frames shared with the
     encoder's previous one mpt_enc_alloc_unpacked finds. */
  if (cap.common >= 0) {
    /* The walk's common case: prev is the stack, and the encoder's
       stack is left to it (caml_memprof_callstack_sync_encoder). */
    mpt_enc_alloc_record(&d->enc, d->trap.now, id, d->trap.wosize,
                         (uint32_t)d->trap.nsamples, MPT_SRC_MINOR,
                         cap.truncated, d->ids, (uint32_t)cap.n,
                         (uint32_t)cap.common,
                         0,      /* the stream never packs: see above */
                         0);
    d->frames.enc_stack_lazy = 1;
  } else {
    mpt_enc_alloc_unpacked(&d->enc, d->trap.now, id, d->trap.wosize,
                           (uint32_t)d->trap.nsamples, MPT_SRC_MINOR,
                           cap.truncated, d->ids, (uint32_t)cap.n);
  }
  d->samples += d->trap.nsamples;
  d->geom_next = d->trap.gap;
  intnat trigger_ofs = d->trap.trigger_ofs;
  int verify = d->verify;
  if (verify) {
    d->trap_capture = cap;
    d->trap_capture_pending = 1;
  }
  stream_unlock(d);
  /* The next point is in the same minor heap, below this one: where and
     when the first of them was drawn (trigger_drawn) still tells
     caml_memprof_tracer_set_trigger whether the heap was emptied since. */
  value *t = s->young_ptr + trigger_ofs;
  trigger_set(s, t < s->young_start ? s->young_start : t);
  reset_young_limit_after_sample(s);
  return verify ? 2 : 1;
}

int caml_memprof_tracer_trap(caml_domain_state *s)
{
  tracer_domain *d = s->memprof_tracer;
  uint64_t now;
  if (!stream_ready(s, d, &now)) return 0;
  /* The allocation: its sub-blocks' lengths, cached for this allocation
     point (none: a poll, or not seen yet). */
  char *sp = First_frame((char *)s->current_stack->sp);
  const unsigned char *lens =
    caml_memprof_callstack_alloc_lens(&d->frames, Saved_return_address(sp));
  if (lens == NULL || lens[0] == 0) goto not_here;
  int n = lens[0];
  lens++;
  /* The sub-blocks from the highest address down, as sample_minor: the
     one where the sample point falls (above young_ptr: only_the_sample_
     point), and how many points fall in it; points in a second sub-block
     are left to the ordinary path. */
  intnat trigger_ofs = trigger_get(s) - s->young_ptr, alloc_ofs = 0;
  uintnat wosize;
  if (n == 1) {                 /* most allocation points: one block */
    n = 0;
    wosize = Wosize_encoded_alloc_len(lens[0]);
  } else {
    for (int i = 0; i < n; i++)
      alloc_ofs += (intnat)Whsize_wosize(Wosize_encoded_alloc_len(lens[i]));
    do {
      n--;
      wosize = Wosize_encoded_alloc_len(lens[n]);
      alloc_ofs -= (intnat)Whsize_wosize(wosize);
    } while (alloc_ofs >= trigger_ofs);
  }
  if (!park_sample(d, now, alloc_ofs, wosize, trigger_ofs)) goto not_here;
  /* memprof_verify=1: the ordinary path, which this allocation then
     takes, compares the stack with upstream's (see trap_capture): the
     trap returns 0 after its sample. */
  return capture_and_record(s, d, n) == 1;
 not_here:
  stream_unlock(d);
  return 0;
}

int caml_memprof_tracer_sample_c(caml_domain_state *s, uintnat wosize)
{
  tracer_domain *d = s->memprof_tracer;
  uint64_t now;
  if (!stream_ready(s, d, &now)) return 0;
  /* One block, at young_ptr; the sample point is above young_ptr. */
  if (!park_sample(d, now, 0, wosize, trigger_get(s) - s->young_ptr)) {
    stream_unlock(d);
    return 0;
  }
  return capture_and_record(s, d, -1);
}

#endif /* CAML_MEMPROF_TRAP */

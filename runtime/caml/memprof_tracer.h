/* memprof_tracer.h: the 5.3.0+memprof native tracer's interface to the rest
   of the runtime.  Every function here is a hook called from one place in
   an upstream file (see runtime/patches/README.md); the logic lives in
   memprof_tracer.c and memprof_trace_writer.c.

   When tracing is off, each hook costs a load and a branch, and the minor
   heap trigger stays at young_start, so OCaml allocation fast paths are
   untouched. */

#ifndef CAML_MEMPROF_TRACER_H
#define CAML_MEMPROF_TRACER_H

#ifdef CAML_INTERNALS

#include "config.h"
#include "misc.h"
#include "mlvalues.h"
#include "domain_state.h"
#include "roots.h"

#include "memprof_trap.h"

/* OCAMLRUNPARAM: if the option starting at [*opt] is one of ours
   ("memprof=..." or "memprof_KEY=..."), record it, advance [*opt] past it
   and its ',' and return 1; otherwise return 0 and leave [*opt] alone.
   Called before upstream's one-letter parser, which would otherwise read
   "memprof=..." as the 'm' option. */
int caml_memprof_tracer_parse_option(char_os **opt);

/* Start tracing if OCAMLRUNPARAM asked for it (from caml_sys_init, once
   the executable name and argv are known). */
void caml_memprof_tracer_init(const char_os *exe_name, char_os **argv);

/* Minor heap: recompute state->memprof_tracer_trigger (called wherever
   upstream recomputes its own memprof trigger).  Keeps a pending sample
   point while it is still ahead or being processed. */
void caml_memprof_tracer_set_trigger(caml_domain_state *state);

/* Called first in caml_alloc_small_dispatch, the allocation already
   performed: when the tracer's sample point is the only reason the
   allocation left the fast path (no interrupt, action or GC due, room in
   the minor heap, statmemprof not sampling), take the sample, reset
   young_limit and return 1: the dispatch returns at once.  Otherwise 0. */
int caml_memprof_tracer_sample_fast(caml_domain_state *state, uintnat wosize,
                                    int flags, int nallocs,
                                    unsigned char *encoded_alloc_lens);

/* The sample trap (CAML_MEMPROF_TRAP, memprof_trap.h): from caml_call_gc,
   with only the general registers saved; the allocation is already
   performed at young_ptr.  Takes the sample and returns 1 when it can do
   so quickly (the conditions of sample_fast, and cached stack and
   locations); else returns 0 having changed nothing. */
int caml_memprof_tracer_trap(caml_domain_state *state);

/* The trap's quick sample for Alloc_small from C (caml_alloc_small_
   dispatch with CAML_DO_TRACK alone): one block of [wosize], already
   performed at young_ptr, whose stack is the OCaml code's that called C.
   Returns 0 having changed nothing when it cannot take it quickly, else
   1, or 2 when memprof_verify=1 leaves the stack to verify. */
int caml_memprof_tracer_sample_c(caml_domain_state *state, uintnat wosize);

/* Minor heap: young_ptr went below memprof_tracer_trigger in the
   allocation [wosize] (a combined allocation of [nallocs] blocks when
   from OCaml), already performed at young_ptr.  Samples without
   allocating or running OCaml code. */
void caml_memprof_tracer_sample_young(caml_domain_state *state,
                                      uintnat wosize, int flags, int nallocs,
                                      unsigned char *encoded_alloc_lens);

/* Statmemprof suspends itself while it captures callstacks and runs its
   callbacks; the tracer does not sample those allocations either (called
   from upstream's update_suspended, before it recomputes the triggers).
   before_/after_statmemprof_sample surround upstream's
   caml_memprof_sample_young in caml_alloc_small_dispatch; after_ is only
   reached when the allocation was redone (a callback that raises cancels
   it). */
void caml_memprof_tracer_statmemprof_suspended(caml_domain_state *state, int on);
void caml_memprof_tracer_before_statmemprof_sample(caml_domain_state *state);
void caml_memprof_tracer_after_statmemprof_sample(caml_domain_state *state,
                                                  uintnat wosize);

/* Any other sampled allocation: same arguments as caml_memprof_sample_block. */
void caml_memprof_tracer_sample_block(value block, size_t allocated_words,
                                      size_t sampled_words, int source);

/* GC interface.  after_minor_gc runs after the minor-GC end barrier (our
   series moves upstream's caml_memprof_after_minor_gc there, as upstream
   5.4 does): before it, another domain may still be promoting this
   domain's young blocks, and an unforwarded header would read as
   "collected". */
void caml_memprof_tracer_after_minor_gc(caml_domain_state *state);
void caml_memprof_tracer_after_major_gc(caml_domain_state *state);
/* Weak scan (compaction): update the addresses of tracked blocks. */
void caml_memprof_tracer_scan_weak(scanning_action f, void *fdata,
                                   caml_domain_state *state);
void caml_memprof_tracer_compaction(caml_domain_state *state, int begin);

/* Domains.  new_domain is called by the new domain's thread in
   domain_create, once its minor heap and Domain.self () exist.
   leave_stw is called by a terminating domain under all_domains_lock,
   right before it leaves the STW participant set (its minor heap is empty
   and its marking and sweeping done): it records the domain's end,
   flushes its stream and hands its tracked blocks to the domains that
   remain, which adopt them in their next STW section, so no cycle end or
   compaction misses them.  delete_domain follows, outside the STW set,
   and has nothing left to do unless the domain's creation failed. */
void caml_memprof_tracer_new_domain(caml_domain_state *state);
void caml_memprof_tracer_leave_stw(caml_domain_state *state);
void caml_memprof_tracer_delete_domain(caml_domain_state *state);

/* Bytecode was freed (Meta.release_bytecode): its addresses may be
   reused by other code, so the tracer looks every code address up
   again. */
void caml_memprof_tracer_code_released(void);

/* A detached thread of the tracer's own (the flusher, the snapshots'
   reaper) running [main] with [arg]: every signal blocked, a 256 kB
   stack.  1 if started. */
int caml_memprof_tracer_start_thread(void *(*main)(void *), void *arg);

/* For heap snapshots (memprof_heap_snapshot.c), which run inside a STW
   section.  tracing: a trace file is open.  flush: write every stream's
   buffered events (so that a snapshot follows the ALLOCs it names).
   iter_tracked: calls [f] on
   every block the tracer tracks (young, major, orphaned) with its ALLOC
   id, under the tracer's locks.  domain_states: the states of the
   domains attached to the tracer (those in the STW set), at most [max];
   returns how many. */
int caml_memprof_tracer_tracing(void);
void caml_memprof_tracer_flush(void);
void caml_memprof_tracer_iter_tracked(void (*f)(void *, value, uint64_t),
                                      void *data);
int caml_memprof_tracer_domain_states(caml_domain_state **out, int max);

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_TRACER_H */

/* memprof_heap_snapshot.h: heap snapshots of the 5.x+memprof tracer.

   A heap snapshot is the graph of every block reachable at one instant,
   with the roots that hold it, written into the trace as SNAPSHOT chunks
   (docs/trace-format.md).  It is taken at the end of a major cycle, inside
   the cycle's stop-the-world section, by the first domain that reaches
   caml_heap_snapshot_at_cycle_end while one is requested; the logic is in
   memprof_heap_snapshot.c.  When no snapshot is requested nor scheduled,
   each entry point costs one load and a branch. */

#ifndef CAML_MEMPROF_HEAP_SNAPSHOT_H
#define CAML_MEMPROF_HEAP_SNAPSHOT_H

#ifdef CAML_INTERNALS

#include "mlvalues.h"
#include "domain_state.h"

/* Set by memprof_tracer.c's OCAMLRUNPARAM parser (keys
   memprof_snapshot_at_exit, _signal, _every_s, _every_cycles); 0: off. */
struct caml_heap_snapshot_params {
  int at_exit;                  /* snapshot at exit                      */
  int signal;                   /* snapshot on this signal               */
  uintnat every_s;              /* at the first cycle end N s after the last */
  uintnat every_cycles;         /* at every Nth major cycle end          */
  int fork;                     /* walk in a forked child (default 1 on
                                   Linux), else in the pause             */
  int sweep;                    /* sweep the heap in address order
                                   (explicit ids; default 1), else walk
                                   from the roots breadth first          */
};
extern struct caml_heap_snapshot_params caml_heap_snapshot_params;

/* Apply the parameters: install the snapshot signal handler, arm the
   periodic triggers (from caml_memprof_tracer_init, once OCAMLRUNPARAM
   has been read). */
void caml_heap_snapshot_init(void);

/* Called by every domain at the start of the major-cycle-end STW
   section (through caml_memprof_tracer_after_major_gc), before any
   domain empties its minor heap: takes the snapshot if one is due. */
void caml_heap_snapshot_at_cycle_end(caml_domain_state *s);

/* From the tracer's exit handler, before the trace is closed: takes the
   at-exit snapshot if OCAMLRUNPARAM asked for one and the calling thread
   is an OCaml domain. */
void caml_heap_snapshot_at_exit(void);

/* Reap a forked snapshot's child once it has ended ([wait]: waiting for
   it) and append its snapshot to the trace: from the flusher's ticks, and
   before the trace is closed.  One load when no child runs. */
void caml_heap_snapshot_reap(int wait);

/* In the child of the program's fork: the snapshot's child, if any, is
   not its own. */
void caml_heap_snapshot_forget_after_fork(void);

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_HEAP_SNAPSHOT_H */

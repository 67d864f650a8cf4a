/* memprof_callbacks.h: the closures a sampled stack holds, for the
   5.x+memprof tracer (memprof_callbacks=N).

   Why
   A scheduler (Lwt, Async) runs the program's callbacks from its own
   loop: what it allocates while it links, resolves and wakes up promises
   has no frame of the program on the stack but the one that started the
   loop, so every view charged it to the program's entry.  The frames of
   the scheduler hold the closure they run (a live slot of the frame) or
   a closure of their own whose environment holds the program's callback;
   the closure's code pointer names the program's function.  The tracer
   adds such closures to the sample's stack as frames of their own
   (docs/trace-format.md, "Callback frames"), and the tools attribute to
   them what a hidden layer allocated.

   Contracts
   - Native code only; bytecode has no frame descriptors with live slots
     (caml_memprof_callbacks_scan returns 0 there).
   - Called by the tracer on the sample path, with the stream lock held,
     on the current domain's current stack, where every live slot holds a
     valid value: nothing here allocates, moves or writes OCaml values. */

#ifndef CAML_MEMPROF_CALLBACKS_H
#define CAML_MEMPROF_CALLBACKS_H

#ifdef CAML_INTERNALS

#include <stdint.h>
#include "config.h"
#include "mlvalues.h"
#include "backtrace_prim.h"

/* A closure held by frame [frame] (0: the innermost frame, numbered as
   the callstack capture numbers them), through a live slot or through the
   environment of a closure in a live slot; [code]: the entry of its
   function (for arity > 1, the direct entry, not caml_curryN's). */
typedef struct {
  uint32_t frame;
  uintnat code;
} caml_memprof_held_closure;

/* Most closures recorded per sample: the innermost ones. */
#define CAML_MEMPROF_MAX_HELD_CLOSURES 8

/* The closures held by the innermost [max_frames] frames of the current
   stack (parent fibers included), innermost first, each function once:
   at most [max_out] into [out]; returns how many.  [innermost_regs]: the
   registers caml_call_gc saved (Caml_state->gc_regs) when the sample is
   an allocation from OCaml, whose innermost frame's live values may be
   there; NULL otherwise. */
int caml_memprof_callbacks_scan(uint32_t max_frames, value *innermost_regs,
                                caml_memprof_held_closure *out, int max_out);

/* The backtrace slot of the first call or allocation point at or after
   [code] (a function's entry) within [max_bytes], or NULL: its debug
   information locates the function.  A function with no call and no
   allocation has no such point: the next function's would be found, so
   the search stops at max_bytes, and the tools say where to look (see
   docs/ocaml-memprof.md).  About 15 instructions per byte searched:
   callers cache the answer per code pointer. */
backtrace_slot caml_memprof_callbacks_code_slot(uintnat code,
                                                uintnat max_bytes);

#endif /* CAML_INTERNALS */

#endif /* CAML_MEMPROF_CALLBACKS_H */

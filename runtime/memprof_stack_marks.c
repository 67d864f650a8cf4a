/* memprof_stack_marks.c: marks on return addresses, for the tracer's
   stack walk (issue 35: deep stacks).

   Why
   A capture checks the frames it shares with the previous one (prev),
   one load and compare each (memprof_callstack_walk.h), because nothing
   in the stack says how far the program returned since: a program that
   returns and calls again can rebuild a frame at the same address with
   the same return address.  On a stack thousands of frames deep whose
   depth changes between samples that check was most of a sample.  A
   mark says it: a frame whose return-address word still holds the mark
   written there at an earlier sample was never returned to since, so
   neither were the frames out from it.

   Data structures
   CAML_MEMPROF_MARKS stubs in the text section, CAML_MEMPROF_MARK_STUB_
   SIZE bytes apart, the i-th an indirect jump through
   caml_memprof_mark_targets[i]: the mark of return address r is the
   address of a stub whose target is r.  A stub is given to one return
   address for the program's life (a mark may stay in a stack for as
   long as the frame lives, and in dead stack memory for ever), so a mark
   means its return address wherever it is read, whichever domain or
   fiber reads it, and nothing ever takes a mark back or puts the address
   back.  Which stub a return address has is kept in a table (open
   addressing, twice as many slots as stubs), filled under a lock that a
   maker tries and never waits for: the maker that finds it taken makes
   no mark that time, so neither a fork nor a signal can leave a domain
   waiting.  The tracer keeps the marks it made in its cache
   (memprof_callstack.c), so this table is read once per return address
   and stream.

   Interface with upstream
   Each version's stack-marks patch maps a mark to its return address
   in caml_find_frame_descr (caml_memprof_mark_pc), through which every
   reader of a return address goes: the GC's stack scan, backtraces
   (caml_next_frame_descriptor, caml_stash_backtrace, Printexc's
   callstacks, continuations'), caml_garbage_collection and the tracer's
   own walks.  A return to a mark costs one indirect jump.  What does
   not go through it: debuggers and profilers that unwind by DWARF call
   frame information, which stop at a stub (the stubs have none); and
   CET shadow stacks, which OCaml's code does not use.

   Who writes marks, and why a mark read is sound: memprof_callstack.c
   ("Marks").

   Synchronisation
   The targets are written before the stub's mark is given (under the
   lock, released with a release store), and a mark reaches another
   domain only in a stack, which that domain reads after a stop-the-world
   synchronisation or in a forked child. */

#define CAML_INTERNALS
#include "caml/config.h"
#include "caml/memprof_stack_marks.h"

#ifdef CAML_MEMPROF_STACK_MARKS
#include <stdatomic.h>

uintnat caml_memprof_mark_targets[CAML_MEMPROF_MARKS]
  __attribute__((visibility("hidden")));

_Static_assert(CAML_MEMPROF_MARK_STUB_SIZE == 8,
               "a stub is jmp *disp32(%rip), 6 bytes, padded to 8");

__attribute__((used)) static void mark_stubs(void)
{
  __asm__ volatile(
    ".pushsection .text\n"
    "  .p2align 4\n"
    "  .globl caml_memprof_mark_stubs\n"
    "  .hidden caml_memprof_mark_stubs\n"
    "  .type caml_memprof_mark_stubs, @function\n"
    "caml_memprof_mark_stubs:\n"
    "  .set .Lcaml_memprof_mark_i, 0\n"
    "  .rept %c0\n"
    "  jmp *(caml_memprof_mark_targets + 8 * .Lcaml_memprof_mark_i)(%%rip)\n"
    "  .p2align 3, 0xcc\n"
    "  .set .Lcaml_memprof_mark_i, .Lcaml_memprof_mark_i + 1\n"
    "  .endr\n"
    "  .size caml_memprof_mark_stubs, .-caml_memprof_mark_stubs\n"
    ".popsection\n"
    :: "i"(CAML_MEMPROF_MARKS));
}

#define MARK_SLOTS (2 * CAML_MEMPROF_MARKS)
static uintnat mark_keys[MARK_SLOTS];
static uint16_t mark_index[MARK_SLOTS];
static unsigned marks_used;
static atomic_int marks_lock;

uintnat caml_memprof_mark_of(uintnat r)
{
  uintnat mark = 0;
  if (r == 0 || caml_memprof_is_mark(r)
      || atomic_exchange_explicit(&marks_lock, 1, memory_order_acquire))
    return 0;
  uintnat h = (uintnat)((r * 0x9e3779b97f4a7c15ull) >> 51) & (MARK_SLOTS - 1);
  while (mark_keys[h] != 0 && mark_keys[h] != r) h = (h + 1) & (MARK_SLOTS - 1);
  if (mark_keys[h] != r && marks_used < CAML_MEMPROF_MARKS) {
    caml_memprof_mark_targets[marks_used] = r;
    mark_keys[h] = r;
    mark_index[h] = (uint16_t)marks_used++;
  }
  if (mark_keys[h] == r)
    mark = (uintnat)caml_memprof_mark_stubs
           + mark_index[h] * CAML_MEMPROF_MARK_STUB_SIZE;
  atomic_store_explicit(&marks_lock, 0, memory_order_release);
  return mark;
}
#endif

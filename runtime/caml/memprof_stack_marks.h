/* memprof_stack_marks.h: return addresses marked by the tracer, so that a
   later walk of the stack knows which frames the program never returned
   to (memprof_stack_marks.c has the design).

   Contracts
   - CAML_MEMPROF_STACK_MARKS is defined where marks exist: native code
     on x86-64 ELF with GCC or Clang.  Elsewhere caml_memprof_mark_pc is
     the identity, caml_memprof_is_mark is 0, and nothing else here is
     declared.
   - A mark is the address of one of CAML_MEMPROF_MARKS stubs, each of
     which stands for one return address for the program's life: a
     return to the stub goes on at that address, and
     caml_memprof_mark_pc(mark) gives it.  Every reader of a return
     address as a code address maps a mark through caml_memprof_mark_pc
     (upstream's caml_find_frame_descr, through each version's
     stack-marks patch, when the address has no descriptor).
   - caml_memprof_is_mark(w): whether [w] is a mark (the test of
     caml_memprof_mark_pc alone: upstream's lookup makes it only when
     [w] has no frame descriptor, so that programs that are not traced
     pay nothing).
   - caml_memprof_mark_of(r): the mark of return address [r] (made on
     first use, under a lock that is tried, never waited for), or 0 when
     none can be made (every stub used, or the lock taken). */

#ifndef CAML_MEMPROF_STACK_MARKS_H
#define CAML_MEMPROF_STACK_MARKS_H

#ifdef CAML_INTERNALS

#include "config.h"

#if defined(NATIVE_CODE) && defined(__x86_64__) && defined(__ELF__) \
    && defined(__GNUC__)
#define CAML_MEMPROF_STACK_MARKS 1
#define CAML_MEMPROF_MARKS 4096
#define CAML_MEMPROF_MARK_STUB_SIZE 8
extern char caml_memprof_mark_stubs[]
  __attribute__((visibility("hidden")));
extern uintnat caml_memprof_mark_targets[]
  __attribute__((visibility("hidden")));

/* Whether [w] is a mark. */
Caml_inline int caml_memprof_is_mark(uintnat w)
{
  return w - (uintnat)caml_memprof_mark_stubs
         < CAML_MEMPROF_MARKS * CAML_MEMPROF_MARK_STUB_SIZE;
}

/* The return address [pc] stands for: the marked one, or [pc]. */
Caml_inline uintnat caml_memprof_mark_pc(uintnat pc)
{
  if (__builtin_expect(caml_memprof_is_mark(pc), 0))
    return caml_memprof_mark_targets[(pc - (uintnat)caml_memprof_mark_stubs)
                                     / CAML_MEMPROF_MARK_STUB_SIZE];
  return pc;
}

uintnat caml_memprof_mark_of(uintnat r);
#else
#define caml_memprof_mark_pc(pc) (pc)
#define caml_memprof_is_mark(w) 0
#endif

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_STACK_MARKS_H */

/* memprof_trap.h: whether the 5.x+memprof sample trap is built, and its
   entry in caml_call_gc.

   The trap (memprof_trap.c): on amd64 Linux, a minor allocation from
   OCaml that reached only the tracer's sample point (memprof_tracer_
   trigger) is sampled by caml_memprof_tracer_trap, called from the start
   of caml_call_gc with only the general registers that C may clobber
   saved, instead of caml_call_gc's every register and the round trip
   through caml_garbage_collection.  The trap returns 0 when it cannot
   take the sample the quick way (anything else is due, a stack or
   location not yet cached, a full buffer...): caml_call_gc then goes on
   as upstream's, with every register as it was.

   Contracts
   - CAML_MEMPROF_TRAP is defined in the native runtime's C files and in
     amd64.S alike where the trap is built: x86-64 Linux, GCC 9 or later
     (its target("general-regs-only")), no ThreadSanitizer, not the
     debug runtime (whose assertions call out).  Elsewhere
     MEMPROF_TRAP_ENTRY is empty and nothing changes.
   - Every C function the trap reaches is compiled with
     target("general-regs-only") (memprof_trap.c with the walk of
     memprof_callstack_walk.h inlined, memprof_trace_codec.c in the
     runtime, and the writer's caml_trace_writer_now_tsc), so no vector or x87 register, which
     OCaml code may hold live across an allocation, is touched; the
     tracer tests check the disassembly.
   - This header is included by amd64.S: preprocessor lines only. */

#ifndef CAML_MEMPROF_TRAP_H
#define CAML_MEMPROF_TRAP_H

#if (defined(NATIVE_CODE) || defined(__ASSEMBLER__)) && defined(__x86_64__) \
    && defined(__linux__) && defined(__GNUC__) && !defined(__clang__) \
    && __GNUC__ >= 9 && !defined(WITH_THREAD_SANITIZER) && !defined(DEBUG)
#define CAML_MEMPROF_TRAP
#endif

#if defined(CAML_MEMPROF_TRAP) && defined(__ASSEMBLER__)
/* At caml_call_gc's label, after ENTER_FUNCTION: young_ptr is in %r15,
   Caml_state in %r14, every other register may be live.  Not our sample
   point (young_ptr at or above it): upstream's path at once.  Else the
   registers C may clobber, but for the vector ones, go to a gc_regs
   bucket as in SAVE_ALL_REGS (%r15 points to it and survives the call,
   being callee-saved), the trap runs on the C stack, and every register
   comes back from the bucket; the trap's answer decides between
   returning to the allocation (young_ptr unchanged: the block stays
   allocated) and upstream's path.  Uses amd64.S's macros, defined before
   caml_call_gc. */
#define MEMPROF_TRAP_ENTRY                                              \
        cmpq    Caml_state(memprof_tracer_trigger), %r15;              \
        jae     7f;                                                     \
        movq    %r15, Caml_state(young_ptr);                            \
        movq    Caml_state(gc_regs_buckets), %r15;                      \
        movq    %r11, 11*8(%r15);                                       \
        movq    0(%r15), %r11;                                          \
        movq    %r11, Caml_state(gc_regs_buckets);                      \
        movq    %rax, 0*8(%r15);                                        \
        movq    %rdi, 2*8(%r15);                                        \
        movq    %rsi, 3*8(%r15);                                        \
        movq    %rdx, 4*8(%r15);                                        \
        movq    %rcx, 5*8(%r15);                                        \
        movq    %r8, 6*8(%r15);                                         \
        movq    %r9, 7*8(%r15);                                         \
        movq    %r10, 10*8(%r15);                                       \
        SWITCH_OCAML_TO_C;                                              \
        movq    %r14, C_ARG_1;                                          \
        C_call  (GCALL(caml_memprof_tracer_trap));                      \
        SWITCH_C_TO_OCAML;                                              \
        testl   %eax, %eax;                                             \
        movq    0*8(%r15), %rax;                                        \
        movq    Caml_state(gc_regs_buckets), %r11;                      \
        movq    %r11, 0(%r15);                                          \
        movq    %r15, Caml_state(gc_regs_buckets);                      \
        movq    2*8(%r15), %rdi;                                        \
        movq    3*8(%r15), %rsi;                                        \
        movq    4*8(%r15), %rdx;                                        \
        movq    5*8(%r15), %rcx;                                        \
        movq    6*8(%r15), %r8;                                         \
        movq    7*8(%r15), %r9;                                         \
        movq    10*8(%r15), %r10;                                       \
        movq    11*8(%r15), %r11;                                       \
        movq    Caml_state(young_ptr), %r15;                            \
        jz      7f;                                                     \
        CFI_REMEMBER_STATE;                                             \
        LEAVE_FUNCTION;                                                 \
        ret;                                                            \
        CFI_RESTORE_STATE;                                              \
7:
#else
#define MEMPROF_TRAP_ENTRY
#endif

#endif /* CAML_MEMPROF_TRAP_H */

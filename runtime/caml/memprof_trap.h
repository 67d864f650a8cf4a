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
     memprof_callstack_walk.h and the writer's caml_trace_writer_now_tsc
     inlined, and memprof_trace_codec.c in the runtime), so no vector
     or x87 register, which OCaml code may hold live across an
     allocation, is touched; the tracer tests check the disassembly.
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
   point (young_ptr at or above it): upstream's path at once.  Else
   young_ptr goes to the domain state, the OCaml stack pointer to %r15
   (callee-saved in C, and the frame's CFA register meanwhile) and to the
   current stack's sp (the trap walks the stack from there), and the
   registers C may clobber, but for the vector ones, are pushed on the C
   stack, where the trap runs; they come back from there, and the trap's
   answer decides between returning to the allocation (young_ptr
   unchanged: the block stays allocated) and upstream's path.  Unlike
   SWITCH_OCAML_TO_C, the C stack's link is not updated: the trap neither
   calls OCaml nor raises, nor does anything walk the C stack meanwhile.
   The pushes keep the C stack 16-byte aligned at the call with the 8
   bytes below them. */
#define MEMPROF_TRAP_ENTRY                                              \
        cmpq    Caml_state(memprof_tracer_trigger), %r15;              \
        jae     7f;                                                     \
        movq    %r15, Caml_state(young_ptr);                            \
        movq    %rsp, %r15;                                             \
        CFI_REMEMBER_STATE;                                             \
        CFI_DEF_CFA_REGISTER(%r15);                                     \
        movq    Caml_state(c_stack), %rsp;                              \
        pushq   %r11;                                                   \
        pushq   %r10;                                                   \
        pushq   %r9;                                                    \
        pushq   %r8;                                                    \
        pushq   %rdi;                                                   \
        pushq   %rsi;                                                   \
        pushq   %rdx;                                                   \
        pushq   %rcx;                                                   \
        pushq   %rax;                                                   \
        subq    $8, %rsp;                                               \
        movq    Caml_state(current_stack), %r11;                        \
        movq    %r15, Stack_sp(%r11);                                   \
        movq    %r14, C_ARG_1;                                          \
        C_call  (GCALL(caml_memprof_tracer_trap));                      \
        addq    $8, %rsp;                                               \
        testl   %eax, %eax;                                             \
        popq    %rax;                                                   \
        popq    %rcx;                                                   \
        popq    %rdx;                                                   \
        popq    %rsi;                                                   \
        popq    %rdi;                                                   \
        popq    %r8;                                                    \
        popq    %r9;                                                    \
        popq    %r10;                                                   \
        popq    %r11;                                                   \
        movq    %r15, %rsp;                                             \
        CFI_RESTORE_STATE;                                              \
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

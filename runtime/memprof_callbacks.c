/* memprof_callbacks.c: the closures a sampled stack holds (memprof_
   callbacks=N), for the 5.x+memprof tracer.

   What it gives (memprof_callbacks.h)
   For a sample, the closures held by its innermost N frames: in a live
   slot of the frame, or up to three steps further, in the environment of
   a closure or the first fields of a block held so.  Lwt's bind runs its callback from a closure of its
   own (Lwt.bind's `callback`), whose environment holds the program's
   function; while the promise that function returned is linked and
   resolved, the program's function is no longer on the stack, but Lwt's
   closure is live in its frame (its environment is read after the call),
   so one step finds the program's function.  The tracer turns each
   function found into a callback frame (memprof_tracer.c), placed in the
   stack just inside the frame that holds it.

   Data structures
   None kept here: the scan reads the stack and the frame table as they
   are; the tracer caches per stream what a code pointer resolves to.

   The walk
   The frames are numbered as the callstack capture numbers them: the
   walk is upstream's caml_get_callstack's (caml_next_frame_descriptor
   over the current stack, then each parent fiber's), so frame k here is
   entry k of the capture.  A frame's live slots are read as caml_scan_
   stack reads them: an even offset is a word of the frame; an odd one is
   a register that caml_call_gc saved (only an allocation point, the
   innermost frame of a sample from OCaml, has them: the tracer passes
   Caml_state->gc_regs then, and NULL for a sample from C, whose
   innermost frame is a call, all of whose live values are in the frame).
   Lwt's loop over a promise's callbacks allocates with the list it walks
   in registers.

   From a code pointer to a location
   The function's first call or allocation point has a frame descriptor
   with the debug information of the function, the key of the location
   the tracer defines.  The frame table is a hash of return addresses
   with no order: the search probes each byte after the entry up to the
   function's end.  The end is the next function's start, from the
   unwinding table the toolchain writes for every function
   (.eh_frame_hdr's sorted table of function starts, in memory through
   the program headers); without that table (or with an encoding other
   than the usual one) no location is given, never another function's.
   A function with no call and no allocation point has no descriptor and
   gets none either.

   Synchronisation
   None: the stack is the current domain's; the frame table is read as
   caml_find_frame_descr reads it during a sample; dl_iterate_phdr takes
   the loader's lock itself. */

#ifndef _GNU_SOURCE
#define _GNU_SOURCE             /* dl_iterate_phdr */
#endif
#define CAML_INTERNALS
#include "caml/config.h"
#include <stddef.h>
#include <stdint.h>
#include "caml/memprof_callbacks.h"

#ifdef NATIVE_CODE

#include <link.h>
#include <elf.h>
#include <string.h>
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/frame_descriptors.h"
#include "caml/mlvalues.h"
#include "caml/stack.h"

/* Fields looked at in a held closure's environment, and in another
   block: Lwt's keep the program's function among their first few, and
   its promise records, callback lists and states are small. */
#define ENV_FIELDS_SCANNED 8
/* A block of more fields is not looked into: a module's or a functor
   instance's block of functions (Weak.Make's, held by Lwt_io) is not a
   callback the frame runs, and larger records and tuples are data. */
#define BLOCK_FIELDS_SCANNED 4
/* Steps from a live slot: a promise's callbacks record, its list of
   callbacks, a list cell, Lwt's closure, then the program's function in
   its environment. */
#define SCAN_DEPTH 3

static int add_closure(caml_memprof_held_closure *out, int n, int max_out,
                       uint32_t frame, uintnat code)
{
  for (int i = 0; i < n; i++) if (out[i].code == code) return n;
  if (n < max_out) { out[n].frame = frame; out[n].code = code; n++; }
  return n;
}

/* The entry of closure [v]'s function (a block of Closure_tag), or 0
   when the block is not laid out as a closure. */
static uintnat closure_code(value v, mlsize_t wosize)
{
  if (wosize < 2) return 0;
  value info = Closinfo_val(v);
  if (Arity_closinfo(info) == 1) return (uintnat)Field(v, 0);
  /* caml_curryN or caml_tuplifyN first, the function itself next */
  return wosize >= 3 && Start_env_closinfo(info) >= 3 ? (uintnat)Field(v, 2) : 0;
}

/* The closures that value [v], held by frame [frame], leads to in at
   most [depth] steps through fields: a closure is recorded, and its
   environment looked at; another block's first fields are looked at
   (Lwt's callback lists and promise states hold its closures in
   variants and records): see SCAN_DEPTH. */
static int held_closures(value v, uint32_t frame, int depth,
                         caml_memprof_held_closure *out, int n, int max_out)
{
  if (!Is_block(v) || n >= max_out) return n;
  header_t hd = Hd_val(v);
  tag_t tag = Tag_hd(hd);
  mlsize_t wosize = Wosize_hd(hd), from = 0, to;
  if (tag == Infix_tag) {
    /* A function of a recursive set: its own entry is its first field. */
    return add_closure(out, n, max_out, frame, (uintnat)Field(v, 0));
  } else if (tag == Closure_tag) {
    uintnat code = closure_code(v, wosize);
    if (code) n = add_closure(out, n, max_out, frame, code);
    if (wosize < 2) return n;
    from = Start_env_closinfo(Closinfo_val(v));
  } else if (tag >= No_scan_tag || tag == Forward_tag || tag == Cont_tag
             || wosize > BLOCK_FIELDS_SCANNED) {
    return n;
  }
  if (depth == 0 || from >= wosize) return n;
  mlsize_t fields = tag == Closure_tag ? ENV_FIELDS_SCANNED : BLOCK_FIELDS_SCANNED;
  to = wosize - from > fields ? from + fields : wosize;
  for (mlsize_t i = from; i < to && n < max_out; i++)
    n = held_closures(Field(v, i), frame, depth - 1, out, n, max_out);
  return n;
}

int caml_memprof_callbacks_scan(uint32_t max_frames, value *innermost_regs,
                                caml_memprof_held_closure *out, int max_out)
{
  caml_frame_descrs *fds = caml_get_frame_descrs();
  struct stack_info *stack = Caml_state->current_stack;
  char *sp;
  uintnat pc;
  int n = 0;
  caml_get_stack_sp_pc(stack, &sp, &pc);
  for (uint32_t k = 0; k < max_frames && n < max_out; ) {
    frame_descr *d = caml_next_frame_descriptor(fds, &pc, &sp, stack);
    if (d == NULL) {
      stack = Stack_parent(stack);
      if (stack == NULL) break;
      caml_get_stack_sp_pc(stack, &sp, &pc);
      continue;
    }
    /* caml_next_frame_descriptor has moved sp past the frame */
    char *frame_sp = sp - frame_size(d);
    for (uint16_t i = 0; i < d->num_live && n < max_out; i++) {
      uint16_t ofs = d->live_ofs[i];
      value v;
      if (!(ofs & 1)) v = *(value *)(frame_sp + ofs);
      else if (k == 0 && innermost_regs != NULL) v = innermost_regs[ofs >> 1];
      else continue;
      n = held_closures(v, k, SCAN_DEPTH, out, n, max_out);
    }
    k++;
  }
  return n;
}

/* ---- The end of the function that starts at a code pointer ---- */

/* .eh_frame_hdr (version 1): the usual encodings, those GNU ld writes:
   eh_frame_ptr pc-relative 4 bytes, fde_count 4 bytes unsigned, the
   table's pairs relative to the header's start, 4 bytes signed. */
#define EH_PE_pcrel_sdata4 0x1b
#define EH_PE_udata4 0x03
#define EH_PE_datarel_sdata4 0x3b

struct function_end_search {
  uintnat code;
  uintnat end;        /* the next function's start; 0: unknown */
  int done;
};

static int in_segment(const struct dl_phdr_info *info, uintnat a)
{
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    uintnat lo = info->dlpi_addr + ph->p_vaddr;
    if (ph->p_type == PT_LOAD && a >= lo && a - lo < ph->p_memsz) return 1;
  }
  return 0;
}

static int find_function_end(struct dl_phdr_info *info, size_t size,
                             void *arg)
{
  struct function_end_search *s = arg;
  (void)size;
  if (!in_segment(info, s->code)) return 0;
  s->done = 1;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_GNU_EH_FRAME || ph->p_memsz < 12) continue;
    const uint8_t *hdr = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
    if (hdr[0] != 1 || hdr[1] != EH_PE_pcrel_sdata4
        || hdr[2] != EH_PE_udata4 || hdr[3] != EH_PE_datarel_sdata4)
      return 1;
    uint32_t count;
    memcpy(&count, hdr + 8, 4);
    if ((uintnat)count > (ph->p_memsz - 12) / 8) return 1;
    const uint8_t *table = hdr + 12;
    /* The first start above the code pointer: a binary search. */
    uint32_t lo = 0, hi = count;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      int32_t rel;
      memcpy(&rel, table + 8 * (size_t)mid, 4);
      if ((uintnat)(hdr + rel) <= s->code) lo = mid + 1; else hi = mid;
    }
    if (lo < count) {
      int32_t rel;
      memcpy(&rel, table + 8 * (size_t)lo, 4);
      s->end = (uintnat)(hdr + rel);
    }
    return 1;
  }
  return 1;
}

backtrace_slot caml_memprof_callbacks_code_slot(uintnat code,
                                                uintnat max_bytes)
{
  struct function_end_search s = { code, 0, 0 };
  dl_iterate_phdr(find_function_end, &s);
  if (s.end <= code) return NULL;
  uintnat end = s.end - code > max_bytes ? code + max_bytes : s.end;
  caml_frame_descrs *fds = caml_get_frame_descrs();
  /* A return address follows a call: never the entry itself. */
  for (uintnat pc = code + 1; pc < end; pc++) {
    frame_descr *d = caml_find_frame_descr(fds, pc);
    if (d != NULL && !frame_return_to_C(d) && frame_has_debug(d))
      return (backtrace_slot)d;
  }
  return NULL;
}

#else /* bytecode */

int caml_memprof_callbacks_scan(uint32_t max_frames, value *innermost_regs,
                                caml_memprof_held_closure *out, int max_out)
{
  (void)max_frames; (void)innermost_regs; (void)out; (void)max_out;
  return 0;
}

backtrace_slot caml_memprof_callbacks_code_slot(uintnat code,
                                                uintnat max_bytes)
{
  (void)code; (void)max_bytes;
  return NULL;
}

#endif

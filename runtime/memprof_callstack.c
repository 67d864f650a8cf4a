/* memprof_callstack.c: callstack capture for the 5.x+memprof tracer.

   Why not caml_get_callstack alone
   Per captured frame, upstream's walk costs a frame-table hash probe in
   caml_find_frame_descr, a call through caml_next_frame_descriptor and a
   store of the backtrace slot; the tracer then mapped each slot to its
   location id with a second hash probe.  About 150 instructions per frame
   in all, most of a sample's cost on ordinary stacks.

   Data structure
   One cache per stream (caml_memprof_callstack_cache), open addressing
   with linear probing, keyed by return address: the entry holds what the
   walk needs from the frame descriptor (the frame size, or a mark for the
   return-to-C frame at the base of an OCaml stack chunk, or for an address
   with no descriptor) and the stream's location id of that frame.  A hit
   costs a multiply, a compare and two loads; a miss does what upstream does
   (caml_find_frame_descr) and asks the tracer to define the location.
   The innermost frame of an allocation from OCaml carries the allocation's
   own debug information (one combined allocation, several sites): its key
   is the return address tagged with the allocation index in the top byte,
   which no user-space code address uses, and on a miss its backtrace slot
   is taken from caml_get_callstack itself, so it is upstream's.  The
   same table keeps, for the sample trap, each allocation point's lengths
   (caml_memprof_callstack_note_alloc), under its return address tagged
   with bit 55.

   A second structure per stream holds the previous capture's frames
   (return address, sp, frame size, location id, and whether the walk came
   to the frame by adding the inner frame's size), a chain from the
   innermost out.  Most samples share their outer frames with the
   previous one: once the walk meets a frame of the previous capture
   (same sp, same return address), the outer frames are checked by
   following the chain, one load and compare each, instead of a probe,
   their location ids are not written again, and the encoder only writes
   how many there are (mpt_enc_alloc_shared).  Why that is sound is said
   at the walk.  The chain lets a capture keep the shared frames where
   they are and link its fresh ones to them, each written once, where the
   walk found it: kept in an array, outermost first, the fresh frames were
   copied again into place after the walk (about 18 instructions a fresh
   frame, some 45 of leaky_server's sample, callgrind at 1e-3).  The
   frames live in a pool of two halves (see caml_memprof_callstack_
   compact).

   Marks (issue 35)
   The frames out from the shallowest point the program returned to
   since the previous sample are unchanged; the check of prev's shared
   frames costs one load and compare each only because nothing else
   tells where that point is.  Marks tell it (memprof_stack_marks.c): a
   mark is a stub that stands for one return address for the program's
   life, and a capture that reaches a stack's root (at least 32 frames)
   writes, into the return-address word of its fresh frames whose depth
   from the root is a multiple of CALLSTACK_MARK_STRIDE (16), the mark of
   the address that word holds (place_marks, in the walk's header); a
   cut capture whose frames all lie in one stack, into one in 16 of the
   frames it wrote, at whatever depth (place_cut_marks: where marks stand
   tells how soon a check meets one, not what a skip finds); and
   into those of the shared frames too when the check went through all
   of a deep prev's without meeting a mark (mark_shared: a loop around a
   deep call returns past the marks and calls down to the same frames
   again, which the check finds unchanged).  A return through a mark
   jumps on to the address; upstream's frame-descriptor lookup maps it
   back (stack-marks patch), so the GC, backtraces and upstream's
   callstacks see the address itself.
   When the check of prev's shared frames stops at a frame g (the
   previous frame f was found unchanged, g's word is not g's key), and
   g's word is the mark of g's key, the walk skips to prev's outermost
   frame: g and every frame out from it are prev's.  Why that is sound:
   - g's word is read at a frame boundary of the live stack (f is a
     live frame, walked to from the current top, and g's word is the
     word after it), and a frame boundary's word is the return address
     pushed by the call that made the frame inside it; no call pushes a
     mark.  So the word holding the mark was written by place_marks and
     no call has written it since: the frame inside it is the activation
     that was there when the mark was written, never returned from
     (a return leaves the word behind the stack pointer, and the next
     call at that depth overwrites it) nor unwound past then rebuilt
     (rebuilding it pushes that word again).  Its callers, g and the
     frames out from it, are as they were then.
   - The mark was written at some capture, at the latest the last one,
     prev: the frames out from g are what they were at prev's capture,
     at the same addresses, provided that they are the same stack
     mapped the same way.  A stack's frames keep their offsets from its
     end (Stack_high) when the stack is reallocated, and a stack keeps
     its id (unique per stack): the skip asks that all of prev lie in
     one stack (marks_stack_id, set by place_marks, or by
     place_cut_marks for a cut prev whose walk never left the stack
     where it began), and that the walk is still in its first stack, of
     that id and that end.  A fiber's parent changes when its
     continuation is resumed elsewhere: a prev that spans a parent is
     never skipped over.
   - Nothing else writes into a suspended frame's return-address word:
     the GC updates values, not return addresses; effects switch stacks
     without touching their frames; stack reallocation copies words
     (marks with them, still standing for their addresses).
   A mark costs nothing to take back: none is ever removed.  It fires
   once (a return through it, an indirect jump), at most one frame in
   16.  Marks are placed by the sample trap's capture too, with the
   marks the stream made before (the mark_memo); the ordinary capture
   makes new ones.  Tested by testsuite/programs/stack_marks.ml
   (memprof_verify=1): exceptions raised across marked frames and the
   same recursion regrown at the same addresses, raise_notrace, a
   handler at every level, effects resumed and discontinued from deep
   stacks, Stack_overflow caught, systhreads, callbacks from C,
   Printexc's callstacks and backtraces through marks, and stacks
   reallocated under marks.
   What deep stacks cost besides that check was cut too: a cut stack's
   innermost frames, which slide along a deep stack as its depth
   changes, are written as a move of the encoder's previous stack
   (finish_capture's window, the STACK_WINDOW record) instead of all of
   them again; the tracer captures stacks up to 4 times the cap the
   reader shows (trace format 6), so that a stack that deep costs what a
   whole one does; the frames beyond a cut prev's outermost are linked
   to prev's rather than copied with them; and prev is copied at most
   once per fresh frame (half_frames).
   Measured and not kept (deep_list in bench/, cachegrind at 1e-3, same
   seed): anchors, prev's frame at every 16th depth kept in an array so
   that the frames a program returned from are passed by a binary search
   rather than one by one (deep_list 9,596 -> 8,950 instructions a
   sample, but the test before the walk's loop cost shallow samples in
   the sample trap 10 to 18, its registers).  Before marks: runs of
   one return address checked by stride, with each capture's fresh
   frames recorded as runs (28 instructions a fresh frame, more than the
   stride saved: 21,067 -> 24,695 a sample); a flag in a cache slot that
   says its frame recurses, the following frames of that address
   written without a lookup each (-10 % on deep_list, but 8 instructions
   more a shallow sample in the trap, or 100 more in the ordinary
   capture for a program that once recursed; the fresh-frame step's own
   loop, which compares each frame's key with the last one's, does it
   now for a compare a frame).

   Validity
   Entries stay valid while the frame tables they came from are in use:
   a return address has one descriptor for the program's life unless a
   frame table is unregistered, which replaces the table object; the cache
   remembers the table it was filled from and clears itself when
   caml_get_frame_descrs() returns another one (registration replaces it
   too, a rare event).  Location ids belong to the stream: the tracer clears
   the cache when it resets the stream's location table.

   Synchronisation
   None here: a cache is used by its stream's domain under the stream lock.

   The walk (native) follows caml_next_frame_descriptor and get_callstack
   in backtrace_nat.c: from the current stack's sp and return address,
   each frame adds its size to sp and reads the next return address; a
   return-to-C frame skips the stack header of a C-to-OCaml transition, or
   ends the stack chunk at Stack_high; a stack's end (or an address with no
   descriptor) continues in the parent fiber's stack.  The tests run every
   sample through both walks (memprof_verify=1) on programs with effects,
   exceptions, callbacks from C, systhreads and several domains.

   The native walk itself is in memprof_callstack_walk.h, inline: the
   sample trap (memprof_trap.c) inlines it as its fast capture, the same
   walk, compiled there for the general registers only, which declines,
   before it changes anything, the stacks that would need more than cached
   frames and a plain end (see the walk).  This file keeps the walk's slow
   parts (a miss, the end-of-stack check, the preparation), which the
   fast capture never reaches.

   The walk (bytecode) follows caml_next_frame_pointer: it scans the
   stack's words, see there; the cache maps return addresses (code
   pointers) to location ids, and the previous capture's frames (return
   address, word, scan state) spare the scan of the outer frames' words.
   The same tests run it against upstream's, also under the toplevel,
   whose code is compiled at run time. */

#define CAML_INTERNALS
#include "caml/config.h"
#include "caml/memprof_trap.h"      /* CAML_MEMPROF_TRAP */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "caml/backtrace.h"
#include "caml/backtrace_prim.h"
#include "caml/domain_state.h"
#include "caml/fiber.h"
#include "caml/memprof_callstack.h"
#include "caml/memprof_callstack_walk.h"
#include "caml/misc.h"
#ifdef NATIVE_CODE
#include "caml/frame_descriptors.h"
#include "caml/stack.h"
#else
#include "caml/fix_code.h"
#endif


#ifdef NATIVE_CODE
/* The walk copies an entry's size and location id to a walked frame as
   one 8-byte word. */
_Static_assert(offsetof(caml_memprof_frame_slot, loc)
               == offsetof(caml_memprof_frame_slot, size) + 4
               && offsetof(caml_memprof_walked_frame, loc)
               == offsetof(caml_memprof_walked_frame, size) + 4,
               "size and loc are adjacent");
_Static_assert(CALLSTACK_ALLOC_LENS_TAG < ALLOC_TAG(0),
               "allocation lengths' keys are apart from the frames'");
#else
/* copy_frame copies linked and loc as one 8-byte word. */
_Static_assert(offsetof(caml_memprof_walked_frame, loc)
               == offsetof(caml_memprof_walked_frame, linked) + 4,
               "linked and loc are adjacent");
#endif

void caml_memprof_callstack_forget_prev(caml_memprof_callstack_cache *c)
{
  c->prev_len = 0;
  c->outer_n = 0;
  if (c->frames) c->inner = c->outermost = c->frames;
  c->prev_encoded = 0;
  c->quick_end = 0;
  c->window = 0;
#ifdef CAML_MEMPROF_STACK_MARKS
  c->marks_stack_id = 0;
#endif
}

/* A stack that grows beyond the cap drops prev's outermost frames at
   each capture, as many as it pushed since the previous one.  Found by
   following the chain from the innermost, they cost a load a frame of
   prev, about 12,000 instructions at a cap of 4,096 (deep_list in
   bench/, 10,000 frames deep: 3,500 a sample on average); that walk
   notes the frames it passes, and the cuts after it find their end
   there, until a cut drops more frames than remain noted. */
void caml_memprof_callstack_cut_prev(caml_memprof_callstack_cache *c,
                                     uint32_t drop, uint32_t outer_n)
{
  uint32_t limit = c->frames_cap;
  caml_memprof_walked_frame *last = c->inner, **notes = c->outer_frames;
  if (drop < outer_n) {
    outer_n -= drop;
    c->outer_end -= drop;
    last = notes[c->outer_end - 1];
  } else {
    if (notes == NULL)
      notes = c->outer_frames = malloc(limit * sizeof *notes);
    if (notes != NULL) {
      for (uint32_t i = 1; i < limit; i++, last = last->outer)
        notes[i - 1] = last;
      notes[limit - 1] = last;
      outer_n = c->outer_end = limit;
    } else {
      for (uint32_t i = 1; i < limit; i++) last = last->outer;
      outer_n = 0;
    }
  }
  last->outer = c->frames;              /* the sentinel */
  c->outermost = last;
  c->outer_n = outer_n;
  c->prev_complete = 0;
}

void caml_memprof_callstack_cache_clear(caml_memprof_callstack_cache *c)
{
  caml_memprof_callstack_sync_encoder(c);
  if (c->slots) memset(c->slots, 0, c->cap * sizeof *c->slots);
  c->count = 0;
  caml_memprof_callstack_forget_prev(c);
#ifdef NATIVE_CODE
  c->lens_pc[0] = c->lens_pc[1] = 0;
#endif
}

void caml_memprof_callstack_cache_free(caml_memprof_callstack_cache *c)
{
  free(c->slots);
  free(c->scratch);
  free(c->frames);
  free(c->outer_frames);
  memset(c, 0, sizeof *c);
}

/* Room for one more entry (load at most 1/2); 0 if out of memory.  The
   first table has 256 slots: with 64, shallow_rec's few dozen keys met
   others in their home slots often enough to cost 40 instructions per
   sample (the walk probes further out of line). */
static int reserve(caml_memprof_callstack_cache *c)
{
  if (2 * (c->count + 1) <= c->cap) return 1;
  uint32_t ncap = c->cap ? 2 * c->cap : 256;
  caml_memprof_frame_slot *n = calloc(ncap, sizeof *n);
  if (!n) return 0;
  for (uint32_t i = 0; i < c->cap; i++)
    if (c->slots[i].key) {
      uint32_t h = caml_memprof_callstack_slot(c->slots[i].key, ncap - 1);
      while (n[h].key) h = (h + 1) & (ncap - 1);
      n[h] = c->slots[i];
    }
  free(c->slots);
  c->slots = n; c->cap = ncap; c->mask = ncap - 1;
  return 1;
}

static caml_memprof_frame_slot *
insert(caml_memprof_callstack_cache *c, uintnat key, uint32_t size,
       uint32_t loc)
{
  if (!reserve(c)) return NULL;
  uint32_t mask = c->mask, h = caml_memprof_callstack_slot(key, mask);
  while (c->slots[h].key) h = (h + 1) & mask;
  c->slots[h].key = key;
  c->slots[h].size = size;
  c->slots[h].loc = loc;
  c->count++;
  return &c->slots[h];
}

/* Upstream's walk, each slot mapped straight through [define]. */
int caml_memprof_capture_callstack_reference(caml_memprof_callstack_cache *c,
                                             uint32_t *ids,
                                             ptrdiff_t alloc_idx,
                                             int *truncated)
{
  uint32_t max = c->max;
  size_t n = caml_get_callstack((size_t)max + 1, &c->scratch, &c->scratch_cap,
                                alloc_idx);
  *truncated = n > max;
  if (n > max) n = max;
  for (size_t i = 0; i < n; i++)
    if ((ids[i] = c->define(c->ctx, c->scratch[i])) == 0) return -1;
  return (int)n;
}

#ifdef NATIVE_CODE
const uintnat caml_memprof_callstack_no_return_address = 0;
#endif

/* The frames of a half of the pool: prev (at most [max] + 1 frames, one
   more than a walk may follow, so that a walk that fills its part knows
   the stack was cut), a walk's fresh frames (as many), and as many
   again, so that prev, copied once per frames_cap fresh frames written
   at least, costs at most a copy per fresh frame whatever its depth (the
   trap leaves a capture that needs to move it to the ordinary path).
   With room for one walk only, a prev about as deep as the pool was
   copied whole every 64 fresh frames: deep_list in bench/, lists of
   10,000 at a cap of 1,024 (prev of 4,097 frames), spent 29,000
   instructions per sample copying. */
static size_t half_frames(uint32_t frames_cap)
{
  return 3 * (size_t)frames_cap + 64;
}

/* A deep prev (more than a quarter of frames_cap frames when the pool
   is compacted) makes the halves DEEP_HALVES times larger, once: each
   compaction copies prev, and sends the capture after it to the ordinary
   path; more room between them makes them rarer.  deep_list in bench/
   (recursions 4,000 frames deep, a cap of 4,096, 1e-3, cachegrind, same
   binary and seed): 22,610 instructions per sample over untraced with
   the small pool, 21,080 with halves twice as large (2 MB per domain at
   the default cap instead of 1), 20,712 four times (4 MB).  Programs
   whose stacks stay shallow keep the small pool. */
#define DEEP_HALVES 2

/* A pool of two halves of [half] frames, its sentinel set: NULL if out
   of memory. */
static caml_memprof_walked_frame *new_pool(size_t half)
{
  caml_memprof_walked_frame *frames = malloc((1 + 2 * half) * sizeof *frames);
  if (frames == NULL) return NULL;
  /* The sentinel: no frame is at or above it, so the search for the
     previous capture's frames stops there without a bound check; and the
     check of prev's outer frames fails there. */
  caml_memprof_walked_frame *sentinel = &frames[0];
  sentinel->key = 1;
  sentinel->outer = sentinel;
#ifdef NATIVE_CODE
  sentinel->sp = (char *)UINTPTR_MAX;
  sentinel->ret_at = &caml_memprof_callstack_no_return_address;
#else
  sentinel->at = (value *)UINTPTR_MAX;
  sentinel->linked = 0;
#endif
  return frames;
}

/* The pool for walks of [max] frames: the sentinel, then two halves,
   and prev emptied.  Also the cache's first table, so that probe never
   meets an empty one.  0 if out of memory, the pool then as it was. */
static int reserve_frames(caml_memprof_callstack_cache *c, uint32_t max)
{
  if (c->cap == 0 && !reserve(c)) return 0;
  size_t half = half_frames(max + 1);
  caml_memprof_walked_frame *frames = new_pool(half);
  if (frames == NULL) return 0;
  free(c->frames);
  c->frames = frames;
  c->half = half;
  caml_memprof_callstack_forget_prev(c);
  free(c->outer_frames);                /* for the former frames_cap */
  c->outer_frames = NULL;
  c->frames_cap = max + 1;
  c->ids_end = c->ids + c->frames_cap;
  c->free = frames + 1;
  c->free_limit = c->free + half - c->frames_cap;
  return 1;
}

/* Why two halves: the walk writes a capture's fresh frames where the
   free part of the current half begins, and prev keeps the frames it
   shares with the next capture where they are, so the live frames are
   scattered below [free].  Copying them, innermost first, to the start
   of the other half, which holds no live frame, makes the rest of that
   half free: at least 2 frames_cap + 64 frames, as prev has at most
   frames_cap.  Prev is copied once per half - frames_cap - prev_len >=
   frames_cap + 64 frames written: at most a copy per fresh frame, the
   cost of a contiguous prev at every capture.  A deep prev is copied
   instead to the first half of a larger pool (DEEP_HALVES), which then
   replaces this one (where memory is short, the compaction goes on in
   this one). */
void caml_memprof_callstack_compact(caml_memprof_callstack_cache *c)
{
  caml_memprof_walked_frame *sentinel = c->frames;
  size_t half = c->half;
  caml_memprof_walked_frame *start = sentinel + 1, *larger = NULL;
  if (half == half_frames(c->frames_cap) && c->prev_len > c->frames_cap / 4
      && (larger = new_pool(DEEP_HALVES * half)) != NULL) {
    half *= DEEP_HALVES;
    start = larger + 1;
  } else if (c->free_limit < start + half) {
    start += half;                      /* in the first half */
  }
  caml_memprof_walked_frame *end = larger != NULL ? larger : sentinel;
  caml_memprof_walked_frame *to = start;
  c->outer_n = 0;                       /* prev's frames move */
  for (caml_memprof_walked_frame *f = c->inner; f != sentinel; f = f->outer) {
    copy_frame(to, f);
    to->outer = to + 1;
    to++;
  }
  if (to > start) {     /* always for a larger pool: prev is deep */
    to[-1].outer = end;
    c->inner = start;
    c->outermost = to - 1;
  }
  if (larger != NULL) {
    free(c->frames);
    c->frames = larger;
    c->half = half;
  }
  c->free = to;
  c->free_limit = start + half - c->frames_cap;
}

#ifdef NATIVE_CODE

/* Fill the entry of return address [pc] (tagged [key]) on a miss. */
static caml_memprof_frame_slot *
fill(caml_memprof_callstack_cache *c, uintnat key, uintnat pc,
     ptrdiff_t alloc_idx)
{
  frame_descr *d = caml_find_frame_descr(c->frametable, pc);
  if (d == NULL) return insert(c, key, CALLSTACK_NO_DESCR, 0);
  if (frame_return_to_C(d)) return insert(c, key, CALLSTACK_RETURN_TO_C, 0);
  backtrace_slot s = (backtrace_slot)d;   /* backtrace_nat.c's Slot_frame_descr */
  if (alloc_idx >= 0) {
    /* The innermost frame of the walk: its slot as upstream makes it
       (the allocation's own debuginfo when it has one). */
    if (caml_get_callstack(1, &c->scratch, &c->scratch_cap, alloc_idx) != 1)
      return NULL;
    s = c->scratch[0];
  }
  uint32_t loc = c->define(c->ctx, s);
  if (loc == 0) return NULL;
  return insert(c, key, frame_size(d), loc);
}


/* The entry for [key] when its home slot holds another key: the rest of
   the probe sequence, or a fill on a miss.  Out of line, so that the walk's
   loop keeps its registers. */
__attribute__((noinline)) caml_memprof_frame_slot *
caml_memprof_callstack_lookup_slow(caml_memprof_callstack_cache *c,
                                   uintnat key, uintnat pc,
                                   ptrdiff_t alloc_idx)
{
  caml_memprof_frame_slot *e = caml_memprof_callstack_probe(c, key);
  if (e == NULL) e = fill(c, key, pc, key != pc ? alloc_idx : -1);
  return e;
}

/* Whether the walk ends right after the frame at [sp] of [size] in
   [stack] (no outer frame): the walk's rules, emitting nothing.  -1 on
   failure. */
int caml_memprof_callstack_walk_ends_after(caml_memprof_callstack_cache *c,
                                           struct stack_info *stack,
                                           char *sp, uint32_t size)
{
  char *start_sp;
  uintnat pc, start_pc;
  sp += size;
  pc = Saved_return_address(sp);
  for (;;) {
    caml_memprof_frame_slot *e = caml_memprof_callstack_probe(c, pc);
    if (e == NULL && (e = fill(c, pc, pc, -1)) == NULL)
      return -1;
    if (e->size < CALLSTACK_RETURN_TO_C) return 0;
    if (e->size == CALLSTACK_RETURN_TO_C) {
      sp += Stack_header_size;
      if (sp != (char *)Stack_high(stack)) {
        sp = First_frame(sp);
        pc = Saved_return_address(sp);
        continue;
      }
    }
    stack = Stack_parent(stack);
    if (stack == NULL) return 1;
    caml_get_stack_sp_pc(stack, &start_sp, &start_pc);
    sp = start_sp; pc = start_pc;
  }
}

/* The walk's preparation, when the frame tables changed (which may have
   unregistered code, whose addresses the cache must forget) or the
   cache was configured (frametable is then NULL): the cache emptied, the
   walked frames' room reserved for [max]. */
__attribute__((noinline)) int
caml_memprof_callstack_prepare(caml_memprof_callstack_cache *c,
                               caml_frame_descrs *fds)
{
  caml_memprof_callstack_cache_clear(c);
  if ((c->frames == NULL || c->frames_cap != c->max + 1)
      && !reserve_frames(c, c->max))
    return 0;
  c->ids_end = c->ids + c->frames_cap;
  c->frametable = fds;
  return 1;
}


caml_memprof_capture
caml_memprof_capture_callstack(caml_memprof_callstack_cache *c,
                               ptrdiff_t alloc_idx)
{
  return caml_memprof_callstack_walk(c, Caml_state->current_stack,
                                     alloc_idx, 0);
}

#ifdef CAML_MEMPROF_TRAP
void caml_memprof_callstack_note_alloc(caml_memprof_callstack_cache *c,
                                       uintnat pc,
                                       const unsigned char *alloc_len)
{
  uintnat key = pc | CALLSTACK_ALLOC_LENS_TAG;
  if ((void *)caml_get_frame_descrs() != c->frametable || c->cap == 0
      || caml_memprof_callstack_probe(c, key) != NULL)
    return;
  caml_memprof_frame_slot *e = insert(c, key, 0, 0);
  if (e) memcpy(&e->size, &alloc_len, sizeof alloc_len);
}
#endif

#else /* bytecode */

/* Location id of backtrace slot [s] through the cache (which has a
   table: see reserve_frames). */
static inline uint32_t slot_location(caml_memprof_callstack_cache *c,
                                     backtrace_slot s)
{
  caml_memprof_frame_slot *e = caml_memprof_callstack_probe(c, (uintnat)s);
  if (e) return e->loc;
  uint32_t loc = c->define(c->ctx, s);
  if (loc == 0 || !insert(c, (uintnat)s, 0, loc)) return 0;
  return loc;
}

/* backtrace_byt.c's, declared in no header: the table of code blocks with
   debug information (the main program's first, see caml_init_debug_info),
   and the step of its walk. */
extern struct ext_table caml_debug_info;
extern code_t caml_next_frame_pointer(value *stack_high, value **sp,
                                      intnat *trap_spoff);

/* Whether the word at [spv], not an integer, points into a code block with
   debug information other than the main program's: upstream's own test,
   caml_next_frame_pointer over that one word (with a trap frame that is
   not there). */
static int other_code_frame(value *spv)
{
  value *sp = spv;
  intnat no_trap = 0;        /* Trap_pc at spv + 1: never spv */
  return caml_next_frame_pointer(spv + 1, &sp, &no_trap) != NULL;
}

/* The walk follows caml_next_frame_pointer and get_callstack in
   backtrace_byt.c: every word of the stack from sp up that is not an
   integer, not the pc of the next trap frame (skipped, the walk then
   looking for the trap frame it links to), and points into code with debug
   information is a frame's return address; a stack's end continues in the
   parent fiber's stack, whose first word is its trap offset.  Upstream
   tests a word against every code block with debug information (a call
   and a loop per word); here the main program's code, always registered,
   is one range test, and upstream's test runs only on the words outside
   it, and only while other blocks are registered (the toplevel, Dynlink).

   Which trap frames the scan skips depends on its state, the address of
   the next trap frame it expects: after one, caml_next_frame_pointer
   adds the trap frame's link, a tagged integer (Val_long of an offset),
   as an offset, so the address it then expects is not the next trap
   frame's, and the pcs of the outer trap frames count as frames.  The
   walk does the same, so that its stacks are upstream's, and records the
   state with each frame it finds.

   The previous capture's frames are used as in the native walk: a frame
   found at the word where the previous walk found one, with the same
   return address, in a stack with the same end and with the same scan
   state, is the same frame, and each
   outer frame that the previous walk found by scanning on in the same
   stack is checked by one load and compare, without scanning the words
   between.  Why that gives what the scan would: the words between two
   frames of a stack are the working space of the function that the inner
   frame returns to (its arguments, locals, temporaries and trap frames).
   They change only while that function runs, and it runs only after its
   callee returned, popping the inner frame's word.  If the word holds the
   same return address again, at the same place, the function is at the
   same call site at the same depth; where its trap frames are, and their
   links (the only words there that point into code other than return
   addresses: OCaml values never do), is then fixed by the compiler, as is
   where the scan meets the next frame, whose return address the check
   reads.  From the same state, the scan would find the same frames at the
   same words, in the same state: after the last checked frame it resumes
   in the state recorded there.  The stack must end where it ended then
   (the links are offsets from there, and the check must not read past
   the end, where the memory may hold an old stack's frames).  The words above
   a complete previous walk's outermost frame are the same too, up to the
   stack's end, when that end is where the previous walk ended and the
   stack has no parent now either.  Tests: memprof_verify=1, as for the
   native walk (a version that ignored the scan state failed them). */
caml_memprof_capture
caml_memprof_capture_callstack(caml_memprof_callstack_cache *c,
                               ptrdiff_t alloc_idx)
{
  (void)alloc_idx;            /* bytecode has no combined allocations */
  if ((c->frames == NULL || c->frames_cap != c->max + 1)
      && !reserve_frames(c, c->max))
    return capture_failed;
  c->ids_end = c->ids + c->frames_cap;
  if (c->free > c->free_limit) caml_memprof_callstack_compact(c);
  caml_memprof_walked_frame *w = c->free, *fresh_start = w;
  struct stack_info *stack = Caml_state->current_stack;
  value *sp = stack->sp, *high = Stack_high(stack);
  value *trap_pc = high + Caml_state->trap_sp_off;   /* &Trap_pc(...) */
  const char *code = (const char *)caml_start_code;
  uintnat code_size = caml_code_size;
  int other_blocks = caml_debug_info.size > 1;
  uint32_t *ids = c->ids;
  caml_memprof_walked_frame *pq = c->inner;
  uint32_t consumed = 0, shared = 0, linked = 0;
  int cut = 0;
  for (;;) {
    /* The next frame of this stack. */
    value v, *at;
    for (;;) {
      if (sp >= high) goto stack_end;
      at = sp++;
      v = *at;
      if (Is_long(v)) continue;
      if (at == trap_pc) { trap_pc = high + Trap_link(trap_pc); continue; }
      if ((uintnat)((const char *)v - code) < code_size
          || (other_blocks && other_code_frame(at)))
        break;
    }
    while (pq->at < at) { pq = pq->outer; consumed++; }
    if (pq->at == at && pq->key == (uintnat)v && pq->trap == trap_pc
        && pq->high == high) {
      caml_memprof_walked_frame *f = pq, *g;
      while ((g = f->outer)->linked && *g->at == (value)g->key) f = g;
      uint32_t q = c->prev_len - consumed;
      if (f == c->outermost && !c->prev_complete
          && (uint32_t)(ids - c->ids) + q > c->max) {
        /* prev was cut, and this stack has as many frames up to prev's
           outermost: it is cut too. */
        shared = q;
        pq->linked = linked;
        cut = 1;
        break;
      }
      if (f == c->outermost && c->prev_complete && Stack_parent(stack) == NULL
          && (uintnat)high == c->prev_end_pc) {
        shared = q;
        pq->linked = linked;
        break;
      }
      /* Frames pq out to f are this stack's; the scan goes on after f.
         Their copies say how this walk came to them. */
      caml_memprof_walked_frame *appended = w;
      uint32_t *appended_ids = ids;
      if (!append_checked(&w, &ids, c->ids_end, pq, f)) { cut = 1; goto walked; }
      consumed += (uint32_t)(ids - appended_ids);
      appended->linked = linked;
      pq = f->outer;
      sp = f->at + 1;
      trap_pc = f->trap;
      linked = 1;
      continue;
    }
    if (ids == c->ids_end) { cut = 1; break; }
    uint32_t loc = slot_location(c, (backtrace_slot)v);
    if (loc == 0) return capture_failed;
    w->key = (uintnat)v; w->at = at; w->high = high; w->trap = trap_pc;
    w->outer = w + 1; w->linked = linked; w->loc = loc;
    w++;
    *ids++ = loc;
    linked = 1;
    continue;
  stack_end:;
    struct stack_info *parent = Stack_parent(stack);
    if (parent == NULL) { c->prev_end_pc = (uintnat)high; break; }
    stack = parent;
    sp = stack->sp;
    high = Stack_high(stack);
    trap_pc = high + Long_val(sp[0]);
    linked = 0;
  }
 walked:
  return finish_capture(c, fresh_start, w, ids, pq, shared, cut, 0, 0,
                        fresh_start, NULL, NULL, 0);
}

#endif

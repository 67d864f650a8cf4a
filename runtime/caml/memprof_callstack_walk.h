/* memprof_callstack_walk.h: the native stack walk of memprof_callstack.c,
   inline, for the ordinary capture and the sample trap's.

   Why a header
   The sample trap (memprof_trap.c) inlines the walk: as a call, the
   capture cost the trap its prologue and epilogue, its result through
   registers, the trap's own values spilled around the call and reloads
   of what the trap already had.  Inlined (with the trap's other values
   parked in memory across it, see memprof_trap.c), short_lived's sample
   costs 27 instructions fewer, deep_rec's at 10 frames 31 (callgrind at
   1e-3).  So the walk, and the helpers it shares with the bytecode walk,
   are static inline here.  Included by memprof_callstack.c (the ordinary
   capture, the bytecode walk, and the walk's out-of-line slow parts
   declared below) and by memprof_trap.c, nothing else.

   Contracts
   - caml_memprof_callstack_walk(c, stack, alloc_idx, 0) is
     caml_memprof_capture_callstack on [stack], the current domain's
     current stack (see memprof_callstack.h); with [fast] = 1 (a
     constant), the sample trap's capture: the same walk, for a stack of
     cached frames whose walk ends in a match with the previous capture
     finished at once, or at the stack's end; it calls nothing but
     caml_get_frame_descrs, and for any other stack it returns n =
     CALLSTACK_SLOW having changed nothing.
   - Where CAML_MEMPROF_TRAP is defined, memprof_trap.c compiles it for
     the general registers only (from its first include): the trap has
     saved no other register. */

#ifndef CAML_MEMPROF_CALLSTACK_WALK_H
#define CAML_MEMPROF_CALLSTACK_WALK_H

#ifdef CAML_INTERNALS

#include <stdint.h>
#include <string.h>
#include "domain_state.h"
#include "fiber.h"
#include "memprof_callstack.h"
#include "memprof_trace_codec.h"    /* MPT_WINDOW_FRAMES */
#ifdef NATIVE_CODE
#include "frame_descriptors.h"
#include "stack.h"
#endif

/* Marks in caml_memprof_frame_slot.size (frame sizes are below 2^16). */
#define CALLSTACK_RETURN_TO_C 0x10000u
#define CALLSTACK_NO_DESCR 0x20000u

#define ALLOC_TAG(alloc_idx) ((uintnat)((alloc_idx) + 1) << 56)
#define ALLOC_TAG_MASK (((uintnat)1 << 56) - 1)  /* a key's return address */

#ifdef NATIVE_CODE
/* caml_memprof_walked_frame.ret_at of a frame the walk did not reach by
   adding a frame size: never equal to a key. */
extern const uintnat caml_memprof_callstack_no_return_address;
#endif

/* What a failed walk returns (no memory, or a location not defined). */
static const caml_memprof_capture capture_failed = { -1, 0, -1 };
#ifdef NATIVE_CODE
/* What a fast capture returns when the stack needs more than it does. */
static const caml_memprof_capture capture_slow = { CALLSTACK_SLOW, 0, -1 };
#endif

/* Prev, of frames_cap + [drop] frames, cut to frames_cap, the outermost
   [outer_n] of them noted in outer_frames (memprof_callstack.c). */
void caml_memprof_callstack_cut_prev(caml_memprof_callstack_cache *c,
                                     uint32_t drop, uint32_t outer_n);

/* A walked frame copied field by field, but for its link: a structure
   assignment may become a string move (rep movs) where only the general
   registers are used, an instruction per 4 bytes. */
static inline void copy_frame(caml_memprof_walked_frame *to,
                              const caml_memprof_walked_frame *from)
{
#ifdef NATIVE_CODE
  to->key = from->key; to->sp = from->sp; to->ret_at = from->ret_at;
  memcpy(&to->size, &from->size, sizeof from->size + sizeof from->loc);
#else
  to->key = from->key; to->at = from->at; to->high = from->high;
  to->trap = from->trap;
  memcpy(&to->linked, &from->linked, sizeof from->linked + sizeof from->loc);
#endif
}

/* Prev's frames from [pq] out to [f], found still there, appended to the
   walk's at [*w], their ids at [*ids]; 0 when the walk's part fills up
   first ([*ids] reaches [ids_end]: the stack is cut).  Copies, not
   links: the chain from [f] outwards is not all this stack's, and a fast
   capture that gives up later must leave prev as it was. */
static inline int append_checked(caml_memprof_walked_frame **w,
                                 uint32_t **ids, uint32_t *ids_end,
                                 caml_memprof_walked_frame *pq,
                                 caml_memprof_walked_frame *f)
{
  for (caml_memprof_walked_frame *g = pq;; g = g->outer) {
    if (*ids == ids_end) return 0;
    copy_frame(*w, g);
    (*w)->outer = *w + 1;
    (*w)++;
    *(*ids)++ = g->loc;
    if (g == f) return 1;
  }
}

/* A stack of [kept] frames given, whose first [f] ids are fresh and are
   followed by prev's outermost [q] frames, from [pq] out (when
   [written]: by frames beyond prev, whose ids follow at ids + f + q,
   and [pq] is prev's outermost frame; the q frames' ids are not written
   then, and the one the window may need is written here), told to the
   encoder as [f] fresh ids and
   frames common with its previous stack moved by a window (see
   caml_memprof_capture_callstack).  Counting prev's frames from its
   innermost, the encoder's previous stack holds [0, e) (outermost
   first), and the given frames past the fresh ones are [lo, hi): the
   window drops what the encoder holds beyond hi, and adds what it lacks
   up to hi (read from the chain when not written).  The frames the
   window adds are those a cut stack's kept frames reach beyond the
   previous ones (the stack returned), or frames beyond prev (the walk
   went on past a cut prev).  0 when the fresh ids are all that is given. */
static inline int shared_window(caml_memprof_callstack_cache *c,
                                caml_memprof_capture *r, uint32_t kept,
                                uint32_t f, uint32_t q,
                                caml_memprof_walked_frame *pq, int written)
{
  if (f >= kept) return 0;
  uint32_t p = c->prev_len, e = p - c->enc_short;
  uint32_t lo = p - q, hi = lo + (kept - f), start;
  if (lo >= e) {
    c->window_drop = e;
    start = lo;
  } else {
    c->window_drop = hi < e ? e - hi : 0;
    start = e;
  }
  c->window_n = hi > start ? hi - start : 0;
  /* A window's result holds at most twice max frames (trace format 9,
     MPT_WINDOW_FRAMES; mpt_enc_stack_window cuts what it adds beyond): a
     stack that returned from beyond a cut prev's outermost frame gains
     the frames beyond while the encoder still holds prev's innermost
     ones, which the ALLOC then leaves (with at most max frames before:
     stack_marks.ml's realloc lost its root frames, and every later stack
     that shared them was written with others).  Beyond that, the stack
     is given whole. */
  if (e - c->window_drop + c->window_n > MPT_WINDOW_FRAMES(c->max))
    return 0;
  if (written) {
    c->window_at = f + (start - lo);
    /* prev's frames the encoder lacks: at most enc_short, so at most
       one (see finish_capture), prev's outermost. */
    if (start < p) c->ids[c->window_at] = pq->loc;
  } else if (c->window_n > 0) {
    caml_memprof_walked_frame *g = pq;
    for (uint32_t i = lo; i < start; i++) g = g->outer;
    for (uint32_t i = 0; i < c->window_n; i++, g = g->outer)
      c->ids[f + i] = g->loc;
    c->window_at = f;
  }
  c->window = c->window_drop > 0 || c->window_n > 0;
  r->common = (int)(kept - f);
  return 1;
}

/* The end of a walk that wrote [fresh_start, w) (innermost first, each
   linked to the next) and their ids up to [ids_end], and then, when
   [shared] > 0, met prev's outermost [shared] frames, from [pq] out: the
   capture's results, and the new prev.  [tail_q] > 0: the walk found
   prev's outermost [tail_q] frames, left room for their ids at ids +
   [tail_at], and went on beyond them (see shared_window); [tail_end] !=
   NULL: it linked them where they are, from [head] on, up to
   [tail_end], which it linked to the frames it wrote after them from
   [tail_from] on.  [fast]
   (a constant): the fast capture's walk, which ends here only at the
   stack's end, uncut. */
static inline __attribute__((always_inline)) caml_memprof_capture
finish_capture(caml_memprof_callstack_cache *c,
               caml_memprof_walked_frame *fresh_start,
               caml_memprof_walked_frame *w, uint32_t *ids_end,
               caml_memprof_walked_frame *pq, uint32_t shared, int cut,
               uint32_t tail_at, uint32_t tail_q,
               caml_memprof_walked_frame *head,
               caml_memprof_walked_frame *tail_end,
               caml_memprof_walked_frame *tail_from, const int fast)
{
  caml_memprof_capture r;
  caml_memprof_callstack_sync_encoder(c);       /* prev changes below */
  uint32_t *ids = c->ids, max = c->max;
  caml_memprof_walked_frame *sentinel = c->frames;
  uint32_t fresh = (uint32_t)(ids_end - ids), total = fresh + shared, n = fresh;
  uint32_t kept = total < max ? total : max;
  r.truncated = cut || total > max;
  if (!fast) c->window = 0;
  if (shared > 0 && !r.truncated && c->prev_encoded && c->enc_short == 0) {
    r.common = (int)shared;
  } else if (!fast && c->prev_encoded
             && (shared > 0
                 ? shared_window(c, &r, kept, fresh, shared, pq, 0)
                 : tail_q > 0
                   && shared_window(c, &r, kept, tail_at, tail_q,
                                    tail_end, 1))) {
    /* A cut stack's innermost frames, or a stack that goes on beyond a
       cut prev: the fresh ids, prev's shared frames moved by a window. */
    n = shared > 0 ? fresh : tail_at;
  } else {
    if (!fast && tail_q > 0 && tail_at < max) {
      /* The tail's ids: its first frame follows the frames the walk
         wrote before it, one id each. */
      caml_memprof_walked_frame *g =
        tail_at > 0 ? fresh_start[tail_at - 1].outer : head;
      for (uint32_t i = tail_at; i < tail_at + tail_q && i < max;
           i++, g = g->outer)
        ids[i] = g->loc;
    }
    if (n > max) n = max;
    caml_memprof_walked_frame *g = pq;
    for (uint32_t i = shared; i > 0 && n < max; i--, g = g->outer)
      ids[n++] = g->loc;
    r.common = -1;
  }
  /* The new prev: the fresh frames, then prev's shared part, at most
     frames_cap of them (the innermost). */
  c->prev_complete = !cut;
  if (!fast && tail_end != NULL) {
    c->inner = head;
    c->free = w;
    if (w > tail_from) {
      w[-1].outer = sentinel;
      c->outermost = w - 1;
    } else {
      tail_end->outer = sentinel;
      c->outermost = tail_end;
    }
  } else if (fresh > 0) {
    w[-1].outer = shared > 0 ? pq : sentinel;
    c->inner = fresh_start;
    c->free = w;
    if (shared == 0) c->outermost = w - 1;
  } else {
    c->inner = shared > 0 ? pq : sentinel;
    if (shared == 0) c->outermost = sentinel;
  }
  /* Prev keeps at most max + 1 frames (frames_cap), all that the next
     walk needs to know that a stack as deep is cut (see the walk), so
     that it checks no more of them.  Its frames noted in outer_frames
     that are still its own: those out from pq (none when the walk went
     on beyond prev's outermost frame). */
  uint32_t outer_n = shared == 0 ? 0 : c->outer_n < shared ? c->outer_n
                                                           : shared;
  if (!fast && tail_end != NULL) outer_n = 0;
  if (!fast && total > c->frames_cap) {
    caml_memprof_callstack_cut_prev(c, total - c->frames_cap, outer_n);
    total = c->frames_cap;
  } else {
    c->outer_n = c->prev_complete ? 0 : outer_n;
  }
  c->prev_len = total;
#ifdef NATIVE_CODE
  if (total > 0) c->prev_end_sp = c->outermost->sp + c->outermost->size;
#endif
  /* The encoder gets the innermost [kept] (as the caller encodes them:
     not_encoded says when not). */
  c->prev_encoded = 1;
  c->enc_short = total - kept;
  c->quick_max = c->enc_short > 0 ? 0 : max;
  c->quick_end = c->prev_complete && c->prev_end_pc != 0 && !r.truncated;
  r.n = (int)n;
  return r;
}

/* Prev emptied (memprof_callstack.c). */
void caml_memprof_callstack_forget_prev(caml_memprof_callstack_cache *c);

/* Prev copied to the other half of the pool, where the rest is free
   (memprof_callstack.c). */
void caml_memprof_callstack_compact(caml_memprof_callstack_cache *c);

#ifdef NATIVE_CODE

/* The walk's slow parts, out of line in memprof_callstack.c (never
   reached by the fast capture): the entry of a key whose home slot holds
   another (the rest of the probe, or a fill on a miss), whether the walk
   ends right after a frame (-1 on failure), and the preparation of the
   cache for a new frame table. */
caml_memprof_frame_slot *
caml_memprof_callstack_lookup_slow(caml_memprof_callstack_cache *c,
                                   uintnat key, uintnat pc,
                                   ptrdiff_t alloc_idx);
int caml_memprof_callstack_walk_ends_after(caml_memprof_callstack_cache *c,
                                           struct stack_info *stack,
                                           char *sp, uint32_t size);
int caml_memprof_callstack_prepare(caml_memprof_callstack_cache *c,
                                   caml_frame_descrs *fds);

#ifdef CAML_MEMPROF_STACK_MARKS
/* Marks (see "Marks" in memprof_callstack.c): one frame in
   CALLSTACK_MARK_STRIDE, by depth from the root. */
#define CALLSTACK_MARK_STRIDE 16

/* The mark of [g]'s key written where the walk read the key (when the
   walk came to [g] by adding a frame size).  The fast capture marks only
   with the marks the stream made before. */
static inline void mark_frame(caml_memprof_callstack_cache *c,
                              caml_memprof_walked_frame *g, const int fast)
{
  uintnat r = g->key, m;
  if (g->ret_at == &caml_memprof_callstack_no_return_address
      || caml_memprof_is_mark(r))
    return;
  uintnat *memo = c->mark_memo[(r >> 3) & 63];
  if (memo[0] == r) {
    m = memo[1];
  } else {
    if (fast || (m = caml_memprof_mark_of(r)) == 0) return;
    memo[0] = r; memo[1] = m;
  }
  *(uintnat *)g->ret_at = m;
}

/* After a capture of [total] frames (at least twice the stride) that
   ends at the root of [stack]: that stack noted as prev's root stack
   (see the skip), and the fresh frames, [fresh_start] to [fresh_start]
   + [fresh] (innermost first), marked where their depth from the root is
   a multiple of the stride.
   The fast capture marks only with the marks the stream made before.
   (Shallower stacks are not marked: their check costs little, and the
   tests of the mark cost shallow samples.) */
static inline void note_marks_stack(caml_memprof_callstack_cache *c,
                                    struct stack_info *stack)
{
  c->marks_stack = stack;
  c->marks_stack_id = stack->id + 1;
  c->marks_stack_high = (char *)Stack_high(stack);
}

static inline void place_marks(caml_memprof_callstack_cache *c,
                               struct stack_info *stack,
                               caml_memprof_walked_frame *fresh_start,
                               uint32_t fresh, uint32_t total, const int fast)
{
  note_marks_stack(c, stack);
  uint32_t i = (total - 1) % CALLSTACK_MARK_STRIDE;
  if (i == 0) i = CALLSTACK_MARK_STRIDE;
  /* i >= 1: the innermost frame's word is the return from the runtime. */
  for (; i < fresh && total - 1 - i >= CALLSTACK_MARK_STRIDE;
       i += CALLSTACK_MARK_STRIDE) {
    mark_frame(c, &fresh_start[i], fast);
  }
}

/* After a cut capture whose frames all lie in [stack] (the walk never
   went on to a parent stack: its shared frames were found there too, by
   the check or the skip, which stay in the walk's stack): that stack
   noted as prev's, and the frames the walk wrote, [from] to [to], marked
   one in CALLSTACK_MARK_STRIDE.  A cut stack's depth from the root is
   not known, so marks stand at any depth: where they stand matters to
   how soon a check meets one, not to what a skip finds (see "Marks").
   Without them, a stack deeper than the capture's max frames checked
   all of a cut prev's shared frames at every sample (deep_list in
   bench/, 10,000 frames deep: 12,700 instructions a sample). */
static __attribute__((noinline)) void
place_cut_marks(caml_memprof_callstack_cache *c, struct stack_info *stack,
                caml_memprof_walked_frame *from,
                caml_memprof_walked_frame *to)
{
  note_marks_stack(c, stack);
  for (caml_memprof_walked_frame *g = from + CALLSTACK_MARK_STRIDE - 1;
       g < to; g += CALLSTACK_MARK_STRIDE)
    mark_frame(c, g, 0);
}

/* prev's [q] outermost frames, from [pq] out, just checked unchanged
   and ending at the root: those at depths from the root that are
   multiples of the stride marked, as place_marks marks fresh ones. */
static __attribute__((noinline)) void
mark_shared(caml_memprof_callstack_cache *c, caml_memprof_walked_frame *pq,
            uint32_t q, const int fast)
{
  caml_memprof_walked_frame *g = pq;
  uint32_t depth = q - 1;
  for (; depth % CALLSTACK_MARK_STRIDE != 0; depth--) g = g->outer;
  for (; depth >= CALLSTACK_MARK_STRIDE; depth -= CALLSTACK_MARK_STRIDE) {
    mark_frame(c, g, fast);
    for (int i = 0; i < CALLSTACK_MARK_STRIDE; i++) g = g->outer;
  }
}
#endif

/* The walk.  Before each frame is looked up, it is looked for among the
   previous capture's frames: those at higher addresses than the last
   frame found are passed in the chain's order, from prev's innermost
   frame out (the sentinel ends the search).  A frame with the same sp
   and key as a previous one is the same frame, and needs no lookup; then
   each outer frame of prev that the previous walk reached by adding a
   frame size is checked by reading its return address where the walk
   would read it (ret_at) and comparing it with its key (the sentinel
   fails the check).  That is the walk itself, made of the same steps, so
   it accepts exactly the frames the walk would find; a frame reached
   another way (a C-to-OCaml transition, a parent fiber) ends the check,
   and the ordinary walk goes on from there, looking for the next match.
   A frame whose word holds the mark of its key ends the check too, as if
   it had reached prev's outermost frame (see "Marks" in
   memprof_callstack.c).
   When the check reaches the outermost frame of a complete prev and the
   walk ends after it, the stack is the fresh frames plus prev's outer
   part: the last fresh frame is linked to that part, whose location ids
   are not written again, and the encoder is told how many frames it has
   (when its previous stack is prev's, see prev_encoded).  When prev was
   cut (the stack had more than [max] frames), reaching its outermost
   frame with at least [max] + 1 frames in all is enough: this stack is
   cut too.  A cut stack's frames past the fresh ones are then prev's
   innermost shared ones, fewer than the encoder's previous stack holds
   when the stack grew: the encoder is told to drop the others (a
   window, see shared_window) rather than given every frame again; and
   a stack that goes on beyond a cut prev's outermost frame (it
   returned) is given as prev's frames plus those beyond, added by the
   window.
   Most samples end at such a match, with a few fresh frames and the rest
   of a complete prev already encoded: that case is finished here, the
   others by finish_capture.
   [fast] (a constant): the sample trap's capture, which must not call
   out of this file nor reach code that could (a cache miss defines a
   location, a cut prev's match or a full half of the pool changes
   prev's chain, a window calls the encoder): it returns capture_slow
   before it changes anything when the stack needs more than cached
   frames, a match finished here or the stack's end within max frames,
   and the tracer takes the sample the ordinary way: a cut stack too (at
   max + 1 fresh frames, or at a match that leaves more than max frames
   up to prev's outermost).  (Taking a cut of fresh frames alone here,
   given whole, cost deep_list in bench/ 2,700 instructions per sample
   more at 1,024 frames, and shallow_list 12.) */
static inline __attribute__((always_inline)) caml_memprof_capture
caml_memprof_callstack_walk(caml_memprof_callstack_cache *c,
                            struct stack_info *stack, ptrdiff_t alloc_idx,
                            const int fast)
{
  caml_frame_descrs *fds = caml_get_frame_descrs();
  if (__builtin_expect((void *)fds != c->frametable, 0)) {
    if (fast) return capture_slow;
    if (!caml_memprof_callstack_prepare(c, fds)) return capture_failed;
  }
  if (__builtin_expect(c->free > c->free_limit, 0)) {
    if (fast) return capture_slow;
    caml_memprof_callstack_compact(c);
  }
  caml_memprof_walked_frame *w = c->free, *fresh_start = w;
  char *sp = First_frame((char *)stack->sp);
  /* The first frame's key carries the allocation index; the others' are
     their return addresses (so the walk keeps no other copy of them). */
  uintnat key = Saved_return_address(sp);
  if (alloc_idx >= 0) key |= ALLOC_TAG(alloc_idx);
  /* How the walk came to sp. */
  const uintnat *ret_at = &caml_memprof_callstack_no_return_address;
  uint32_t *ids = c->ids;
  caml_memprof_frame_slot *slots = c->slots;
  uint32_t mask = c->mask;
  caml_memprof_walked_frame *pq = c->inner;
  /* [consumed]: prev's frames passed or copied so far; the frames from
     pq out are the rest. */
  uint32_t consumed = 0, shared = 0;
  /* Where prev's outermost frames went on this stack when the walk went
     on beyond them (not in the fast capture): their ids at ids + tail_at,
     the frames after them written from tail_from on; head: the chain's
     first frame. */
  uint32_t tail_at = 0, tail_q = 0;
  caml_memprof_walked_frame *head = fresh_start, *tail_end = NULL,
    *tail_from = NULL;
  uintnat end_pc;
  int cut = 0;
#ifdef CAML_MEMPROF_STACK_MARKS
  int one_stack = 1;            /* the walk is still in its first stack */
#endif
  for (;;) {
    /* Prev's frames the stack returned from: two a turn, which spares a
       jump a frame (a stack that shrank by hundreds of frames: deep_list
       7,842 -> 7,631 instructions a sample). */
    while (pq->sp < sp) {
      caml_memprof_walked_frame *g = pq->outer;
      if (g->sp >= sp) { pq = g; consumed++; break; }
      pq = g->outer;
      consumed += 2;
    }
    if (pq->sp == sp && pq->key == key) {
      /* The fast capture finishes a match only in the common case below,
         a stack of at most max frames up to prev's outermost after a
         capture given whole: else the stack is left to the ordinary
         capture before the check, which the ordinary capture would do
         again (a cut sample of deep_list in bench/ checked its 2,500
         frames twice, and so did the whole sample after a cut one). */
      if (fast
          && (uint32_t)(ids - c->ids) + (c->prev_len - consumed) > c->quick_max)
        return capture_slow;
      caml_memprof_walked_frame *f = pq, *g;
      /* Two frames a turn, which spares a jump a frame.  The outermost
         frame's link is the sentinel, which fails the check. */
      for (;;) {
        g = f->outer;
        if (*g->ret_at != g->key) break;
        f = g->outer;
        if (*f->ret_at != f->key) { f = g; break; }
      }
#ifdef CAML_MEMPROF_STACK_MARKS
      /* The check stopped at a mark of the frame's own return address:
         that frame and those out from it are prev's (see "Marks"). */
      if (f != c->outermost) {
        g = f->outer;
        uintnat word = *g->ret_at;
        if (caml_memprof_is_mark(word)
            && caml_memprof_mark_pc(word) == g->key
            && c->marks_stack == stack
            && c->marks_stack_id == stack->id + 1
            && c->marks_stack_high == (char *)Stack_high(stack)) {
          f = c->outermost;
          c->marks_skips++;
        }
      } else if (__builtin_expect(c->prev_len - consumed
                                  >= 4 * CALLSTACK_MARK_STRIDE, 0)) {
        /* The check went through a deep prev's shared frames to its end
           and met no mark: the program returned past every mark and
           called down again to the same frames (a loop around a deep
           call), or a cut prev's were not marked.  They are marked now,
           so that the next samples stop at a mark within a stride. */
        mark_shared(c, pq, c->prev_len - consumed, fast);
      }
#endif
      if (f == c->outermost) {
        uint32_t fresh = (uint32_t)(ids - c->ids), q = c->prev_len - consumed;
        /* The previous walk's end, repeated: the same return-to-C
           address after prev's outermost frame, at the end of a stack
           with no parent. */
        if (c->quick_end
            && (uintnat)Saved_return_address(c->prev_end_sp) == c->prev_end_pc
            && c->prev_end_sp + Stack_header_size == (char *)Stack_high(stack)
            && Stack_parent(stack) == NULL && fresh + q <= c->max) {
          /* The common case: the fresh frames, linked to prev's
             frames from pq out; prev_complete and prev_encoded stay as
             they are, and so do prev's outermost frame and end. */
          pq->ret_at = ret_at;
          if (fresh > 0) {
            w[-1].outer = pq;
            c->inner = fresh_start;
            c->free = w;
          } else {
            c->inner = pq;
          }
          c->prev_len = q + fresh;
#ifdef CAML_MEMPROF_STACK_MARKS
          if (q + fresh >= 2 * CALLSTACK_MARK_STRIDE)
            place_marks(c, stack, fresh_start, fresh, q + fresh, fast);
#endif
          return (caml_memprof_capture){ (int)fresh, 0, (int)q };
        }
        if (fast) return capture_slow;
        if (c->prev_complete) {
          /* The walk's rules. */
          int end = caml_memprof_callstack_walk_ends_after(c, stack, f->sp,
                                                           f->size);
          slots = c->slots; mask = c->mask;  /* a fill may have grown it */
          if (end < 0) return capture_failed;
          if (end) { shared = q; pq->ret_at = ret_at; break; }
        } else if (fresh + q > c->max) {
          /* prev was cut, and this stack has more than max frames up to
             prev's outermost: it is cut too, and nothing beyond is
             needed. */
          shared = q;
          pq->ret_at = ret_at;
          cut = 1;
          break;
        }
      }
      /* Frames pq out to f are this stack's; the walk goes on after f. */
      uint32_t q = c->prev_len - consumed;
      if (!fast && f == c->outermost && (uint32_t)(c->ids_end - ids) >= q) {
        /* They are prev's outermost frames: linked where they are, the
           frames found beyond them to follow f, as the walk never comes
           back to prev (the fast capture leaves prev as it was: it
           copies).  Going on past a cut prev's outermost frame (the
           stack returned) thus costs neither a copy of each frame nor
           its id: room is left for the ids, written by finish_capture
           where they are needed (deep_list in bench/, 10,000 frames
           deep, cut: 10,000 instructions a sample). */
        tail_at = (uint32_t)(ids - c->ids);
        tail_q = q;
        ids += q;
        consumed += q;
        if (w > fresh_start) w[-1].outer = pq; else head = pq;
        pq->ret_at = ret_at;
        tail_end = f;
        tail_from = w;
        pq = c->frames;                 /* no frame of prev beyond */
        f->outer = w;
        sp = f->sp + f->size;
        ret_at = (const uintnat *)&Saved_return_address(sp);
        key = *ret_at;
        continue;
      }
      /* Their copies say how this walk came to them. */
      caml_memprof_walked_frame *appended = w;
      uint32_t *appended_ids = ids;
      if (!append_checked(&w, &ids, c->ids_end, pq, f)) {
        if (fast) return capture_slow;
        cut = 1;
        goto walked;
      }
      consumed += (uint32_t)(ids - appended_ids);
      appended->ret_at = ret_at;
      pq = f->outer;
      sp = f->sp + f->size;
      ret_at = (const uintnat *)&Saved_return_address(sp);
      key = *ret_at;
      continue;
    }
    uint32_t home = caml_memprof_callstack_slot(key, mask);
    caml_memprof_frame_slot *e = &slots[home];
    /* The home slot, then the next one (inline: with 33 keys in 256
       slots, long_lived in bench/ has two of them one slot out, and
       going out of line for them cost 40 instructions per sample), then
       the rest of the probe. */
    if (__builtin_expect(e->key != key, 0)
        && (e = &slots[(home + 1) & mask], e->key != key)) {
      if (fast) {
        if ((e = caml_memprof_callstack_probe(c, key)) == NULL)
          return capture_slow;
      } else {
        e = caml_memprof_callstack_lookup_slow(c, key, key & ALLOC_TAG_MASK,
                                               alloc_idx);
        if (e == NULL) {
          /* prev's frames linked into this walk's are no longer prev */
          if (tail_end != NULL) caml_memprof_callstack_forget_prev(c);
          return capture_failed;
        }
        slots = c->slots; mask = c->mask;
      }
    }
    uint32_t size = e->size;
    if (size < CALLSTACK_RETURN_TO_C) {
      /* A recursion's frames (the same return address again, so the same
         entry and size) are written without a lookup each, while no frame
         of prev can be at sp (below pq's).  The test costs a shallow
         frame a compare; as a loop of its own, with its own registers,
         it cost shallow samples in the sample trap 17 to 35 instructions
         (short_lived, leaky_server in bench/, 1e-3).  deep_list: 44.8 M
         -> 39.6 M instructions in all (cachegrind, 4,000 frames). */
      /* The entry's fields and the loop's bounds in registers: the
         runtime is compiled with -fno-strict-aliasing, so each store
         into a frame made them loads again (deep_list in bench/, 4,000
         frames, callgrind at 1e-3: 8,198 -> 7,842 instructions a
         sample over untraced). */
      uintnat entry_key = e->key;
      uint32_t loc = e->loc;
      uint64_t size_loc;
      memcpy(&size_loc, &e->size, sizeof size_loc);
      uint32_t *ids_end = c->ids_end;
      char *pq_sp = pq->sp;
      do {
        if (ids == ids_end) {
          if (fast) return capture_slow;
          cut = 1;
          goto walked;
        }
        w->key = key; w->sp = sp; w->ret_at = ret_at; w->outer = w + 1;
        memcpy(&w->size, &size_loc, sizeof size_loc);
        *ids++ = loc;
        w++;
        sp += size;
        ret_at = (const uintnat *)&Saved_return_address(sp);
        key = *ret_at;
      } while (__builtin_expect(key == entry_key, 0) && sp < pq_sp);
      continue;
    }
    end_pc = ret_at != &caml_memprof_callstack_no_return_address
             && size == CALLSTACK_RETURN_TO_C ? key : 0;
    ret_at = &caml_memprof_callstack_no_return_address;
    if (size == CALLSTACK_RETURN_TO_C) {
      sp += Stack_header_size;
      if (sp != (char *)Stack_high(stack)) {
        sp = First_frame(sp);
        key = Saved_return_address(sp);
        continue;
      }
    }
    /* The end of this stack: go on in the parent fiber's
       (caml_get_stack_sp_pc's first frame). */
    if (Stack_parent(stack) == NULL) { c->prev_end_pc = end_pc; break; }
    stack = Stack_parent(stack);
#ifdef CAML_MEMPROF_STACK_MARKS
    one_stack = 0;
#endif
    sp = First_frame((char *)stack->sp);
    key = Saved_return_address(sp);
  }
 walked:;
  caml_memprof_capture r =
    finish_capture(c, fresh_start, w, ids, pq, shared, cut, tail_at,
                   tail_q, head, tail_end, tail_from, fast);
#ifdef CAML_MEMPROF_STACK_MARKS
  /* Marked only when the fresh frames are where the walk wrote them and
     the capture went to the root. */
  if (c->prev_complete && tail_end == NULL
      && c->prev_len >= 2 * CALLSTACK_MARK_STRIDE)
    place_marks(c, stack, fresh_start, (uint32_t)(w - fresh_start),
                c->prev_len, fast);
  else if (!fast && !c->prev_complete && one_stack)
    place_cut_marks(c, stack, fresh_start, w);
  else
    c->marks_stack_id = 0;
#endif
  return r;
}

#endif /* NATIVE_CODE */

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_CALLSTACK_WALK_H */

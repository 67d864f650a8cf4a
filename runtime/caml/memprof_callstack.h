/* memprof_callstack.h: callstack capture for the 5.x+memprof tracer.

   The tracer needs, per sample, the location ids of the frames of the
   allocating code, innermost first.  Upstream's caml_get_callstack walks
   the stack with a frame-table lookup per frame and yields backtrace
   slots, which the tracer then had to map to its location ids with a
   second lookup.  Here one per-stream cache maps a return address straight
   to (frame size, location id), so a frame costs a probe and an add.

   Contracts
   - Native code: the walk is upstream's (caml_next_frame_descriptor's
     rules: frame sizes from the frame table, return-to-C frames skip the
     C-to-OCaml stack header, a fiber's walk continues in its parent), over
     the current domain's current stack; the stack it yields is identical to
     caml_get_callstack's (checked by memprof_verify=1 in the tests).
     Bytecode: caml_next_frame_pointer's rules (every stack word that
     points into code with debug information, trap frames skipped as it
     skips them), with the main program's code tested by one range check,
     each return address mapped through the same cache, and the outer
     frames shared with the previous capture checked one word each; the
     same check against caml_get_callstack.
   - [define] gives the location id of a backtrace slot the cache has not
     seen (the tracer defines the location in its stream); it returns 0 on
     failure, which makes the capture fail (-1).
   - A cache belongs to one stream: its location ids are that stream's.
     Clear it whenever the stream's location table is reset.
   - No allocation on the OCaml heap, no OCaml code; called with the
     stream's lock held (the cache is only used under it). */

#ifndef CAML_MEMPROF_CALLSTACK_H
#define CAML_MEMPROF_CALLSTACK_H

#ifdef CAML_INTERNALS

#include <stdint.h>
#include <string.h>
#include "config.h"
#include "misc.h"
#include "backtrace_prim.h"
#include "memprof_stack_marks.h"

typedef struct {
  uintnat key;          /* return address (native), code pointer (bytecode);
                           the innermost frame of an allocation also carries
                           its allocation index in the top byte; 0 = empty */
  uint32_t size;        /* frame size in bytes, or a CALLSTACK_* mark      */
  uint32_t loc;         /* location id in the stream                        */
} caml_memprof_frame_slot;

/* One frame of a walked stack. */
#ifdef NATIVE_CODE
typedef struct caml_memprof_walked_frame {
  uintnat key;          /* as in caml_memprof_frame_slot                  */
  char *sp;
  const uintnat *ret_at; /* where the walk read [key], when it came to this
                           frame from the next inner one by adding that
                           one's size; else (a C-to-OCaml transition, a
                           child fiber, the innermost frame) a word that
                           holds 0, which no key is                       */
  struct caml_memprof_walked_frame *outer; /* the capture's next outer
                           frame; after its outermost, the sentinel       */
  uint32_t size, loc;
} caml_memprof_walked_frame;
#else
typedef struct caml_memprof_walked_frame {
  uintnat key;          /* the return address (a code pointer)             */
  value *at;            /* the stack word that holds it                    */
  value *high;          /* the end of that stack                           */
  value *trap;          /* the scan's state there: the word it takes for
                           the next trap frame's pc (see the walk)         */
  struct caml_memprof_walked_frame *outer; /* as in native code           */
  uint32_t linked;      /* the walk found this frame by scanning on from
                           the next inner one, in the same stack           */
  uint32_t loc;
} caml_memprof_walked_frame;
#endif

typedef uint32_t (*caml_memprof_define_location)(void *ctx, backtrace_slot s);

typedef struct {
  /* What every capture of the stream is for (caml_memprof_callstack_
     configure): read from here rather than passed, so that the walk keeps
     its registers for the stack. */
  uint32_t *ids;                /* where a capture writes its location ids,
                                   room for max + 1 (used as scratch)    */
  uint32_t *ids_end;            /* ids + frames_cap: a walk that writes as
                                   many frames knows the stack is cut (the
                                   sample trap's leaves it to the ordinary
                                   capture)                              */
  uint32_t max;                 /* the most frames a capture walks and
                                   gives                                 */
  caml_memprof_define_location define;
  void *ctx;
  caml_memprof_frame_slot *slots;
  uint32_t cap, count;          /* cap: a power of two, or 0             */
  uint32_t mask;                /* cap - 1                                */
  void *frametable;             /* the frame table the entries came from */
#ifdef NATIVE_CODE
  /* The allocation lengths of the last two allocation points found
     (caml_memprof_callstack_alloc_lens), the latest first, and the
     return addresses they are for (0: none). */
  uintnat lens_pc[2];
  const unsigned char *lens[2];
#endif
  backtrace_slot *scratch;      /* caml_get_callstack's buffer            */
  size_t scratch_cap;
  /* The previous capture's frames ("prev"), a chain from [inner] out
     to [outermost] through their [outer] links, in a pool: frames[0] is
     the sentinel (sp, at: above every address) that ends the chain (and
     is [inner] when prev is empty); two halves of [half] frames follow
     (3 * frames_cap + 64, twice that once prev is deep).  A walk
     writes its fresh frames, innermost first, from [free] on, and links
     the last one to the frames it shares with prev: a capture writes each
     frame once.  When the current half has less than frames_cap frames
     free ([free] beyond [free_limit]), the chain is copied to the other
     half (caml_memprof_callstack_compact) before the walk. */
  caml_memprof_walked_frame *frames;
  caml_memprof_walked_frame *inner, *outermost, *free, *free_limit;
  size_t half;
  uint32_t prev_len, frames_cap;  /* frames_cap: the pool's walk depth + 1,
                                   max + 1                               */
  /* A cut prev's outermost [outer_n] frames, in the chain's order, end
     at outer_frames[outer_end - 1], [outermost]: noted by the walk of
     the chain that cut prev to frames_cap frames, they tell where the
     next cuts of a stack that grows beyond the cap end (see caml_memprof_
     callstack_cut_prev).  outer_n is 0 while prev is complete, and after
     any other change to its outer end. */
  caml_memprof_walked_frame **outer_frames;  /* frames_cap entries, or NULL */
  uint32_t outer_n, outer_end;
  int prev_complete;            /* prev ends at the stack's root          */
  uintnat prev_end_pc;          /* native: the return-to-C address read
                                   after outermost when the walk ended right
                                   there (that stack's end, no parent),
                                   else 0; bytecode: the end (Stack_high)
                                   of the stack where the last walk that
                                   went to the end ended                   */
  char *prev_end_sp;            /* native: where that return-to-C address
                                   is read (outermost's sp plus its size) */
  int quick_end;                /* prev_complete, prev_end_pc != 0,
                                   prev_encoded and enc_short == 0: what
                                   the walk's common case asks of prev,
                                   in one test                            */
  int prev_encoded;             /* the encoder's previous stack is the
                                   location ids of prev's innermost
                                   prev_len - enc_short frames (the last
                                   capture was encoded), or unknown (0)   */
  uint32_t quick_max;           /* the most frames up to prev's outermost
                                   with which the sample trap's capture
                                   goes on at a match: max, or 0 after a
                                   cut capture (enc_short > 0), which the
                                   walk's common case cannot follow      */
  uint32_t enc_short;           /* prev's outermost frames the encoder's
                                   previous stack lacks: 0 when the last
                                   capture was given whole, prev_len - max
                                   when it was cut                        */
  uint32_t *const *enc_stack;   /* where the encoder keeps its previous
                                   stack (its prev_stack, outermost first,
                                   which a STACK_WINDOW moves)            */
  int enc_stack_lazy;           /* enc_stack is to be prev's location ids,
                                   not written yet (see caml_memprof_
                                   callstack_sync_encoder)                */
  /* The last capture's window (see caml_memprof_capture_callstack): the
     encoder's previous stack is to lose its outermost [window_drop]
     frames and gain the [window_n] ids at ids + [window_at] (innermost
     first) before [common] counts from it; [window]: there is one, not
     yet given to the encoder. */
  int window;
  uint32_t window_drop, window_n, window_at;
#ifdef CAML_MEMPROF_STACK_MARKS
  /* The stack where prev ends, at its root or where it was cut, all of
     prev in it (see "Marks" in memprof_callstack.c): the stack, its id
     plus 1 and its end; id 0 when prev is empty or not known to end so. */
  struct stack_info *marks_stack;
  int64_t marks_stack_id;
  char *marks_stack_high;
  /* The marks this stream made, by return address (direct-mapped), so
     that the sample trap's capture marks without calling out. */
  uintnat mark_memo[64][2];
  uint64_t marks_skips;         /* checks a mark spared (memprof_verify=2
                                   prints their sum at exit)             */
#endif
} caml_memprof_callstack_cache;

/* What a capture gives: in registers, not through pointers (the call is
   on the sample path). */
typedef struct {
  int n;                /* number of ids written, or -1 on failure        */
  int truncated;        /* the stack had more than [max] frames            */
  int common;           /* see caml_memprof_capture_callstack               */
} caml_memprof_capture;

/* Where captures write ([ids]: room for max + 1), how many frames
   they walk and give at most ([max]), how they
   define a location the cache has not seen ([define] gives its id in the
   stream, 0 on failure, which makes the capture fail), and the stream
   encoder's previous stack ([enc_stack], see caml_memprof_callstack_sync_
   encoder).  To be called before the first capture, and again whenever
   one of these changes. */
static inline void
caml_memprof_callstack_configure(caml_memprof_callstack_cache *c,
                                 uint32_t *ids, uint32_t max,
                                 caml_memprof_define_location define,
                                 void *ctx, uint32_t *const *enc_stack)
{
  c->ids = ids; c->max = max;
  c->quick_max = max;
  c->define = define; c->ctx = ctx;
  c->enc_stack = enc_stack;
  c->frametable = NULL;         /* the next capture prepares the cache */
}

/* Capture the current callstack: at most [c->max] location ids into
   [c->ids], innermost first.  [alloc_idx] >= 0 names the allocation, among
   those of a combined allocation from OCaml, whose own location the
   innermost frame gets (as caml_get_callstack's).  Returns the number of
   ids (n), or -1 on failure; [truncated] is set when the stack had more
   than [max] frames.  [common] >= 0 says that the stack is the ids
   returned followed by the outermost [common] frames of the stack last
   given to the encoder (see mpt_enc_alloc_shared): the walk stopped where
   the stack joined the previous capture's, and checked the rest of it
   frame by frame (one load and compare each).  [common] = -1: the ids are
   the whole stack.  When [c->window] is set, [common] counts from the
   encoder's previous stack moved by the window (mpt_enc_stack_window,
   the caller's to write before the ALLOC, then to clear c->window): a
   cut stack's innermost frames, which slide along a deep stack, or
   frames found beyond the outermost of a previous cut stack. */
caml_memprof_capture
caml_memprof_capture_callstack(caml_memprof_callstack_cache *c,
                               ptrdiff_t alloc_idx);

/* What the sample trap's capture (caml_memprof_callstack_walk, see
   memprof_callstack_walk.h) returns for a stack it leaves to the ordinary
   capture. */
#define CALLSTACK_SLOW (-2)

/* The cache's table: open addressing with linear probing, by a
   multiplicative hash.  The product's top bits depend on every bit of the
   key, its tags included (the allocation index, the allocation lengths'
   bit 55; otherwise every key of an allocation point would have one home
   slot): a byte swap brings them down, to be masked (a multiply, a swap
   and a mask: the fold of the tags and the shift it replaces cost 3
   instructions more a lookup). */
static inline __attribute__((always_inline)) uint32_t
caml_memprof_callstack_slot(uintnat key, uint32_t mask)
{
  return (uint32_t)__builtin_bswap64((uint64_t)key * 0x9e3779b97f4a7c15ull) & mask;
}

/* The entry for [key], or NULL.  The table must have slots. */
static inline __attribute__((always_inline)) caml_memprof_frame_slot *
caml_memprof_callstack_probe(caml_memprof_callstack_cache *c, uintnat key)
{
  uint32_t mask = c->mask, h = caml_memprof_callstack_slot(key, mask);
  for (;;) {
    caml_memprof_frame_slot *s = &c->slots[h];
    if (s->key == key) return s;
    if (s->key == 0) return NULL;
    h = (h + 1) & mask;
  }
}

/* Native code: the allocation lengths of the allocation point whose
   return address is [pc] (caml_garbage_collection's alloc_len: the count,
   then the encoded lengths), kept in the cache so that the sample trap
   need not look up the frame descriptor: noted on the ordinary path,
   NULL until then (and after the cache is emptied).  Their key is the
   return address with bit 55 set, which neither a user-space address nor
   the allocation index of a frame's key uses; the pointer is kept in the
   entry's size and loc. */
#ifdef NATIVE_CODE
#define CALLSTACK_ALLOC_LENS_TAG ((uintnat)1 << 55)
void caml_memprof_callstack_note_alloc(caml_memprof_callstack_cache *c,
                                       uintnat pc,
                                       const unsigned char *alloc_len);
static inline const unsigned char *
caml_memprof_callstack_alloc_lens(caml_memprof_callstack_cache *c, uintnat pc)
{
  /* Consecutive samples often come from one or two allocation points (a
     loop's): their lengths are kept at hand, a compare or two instead of
     a probe (with one kept, half of shallow_rec's samples in bench/
     probed). */
  if (pc == c->lens_pc[0]) return c->lens[0];
  if (pc == c->lens_pc[1]) return c->lens[1];
  const unsigned char *alloc_len = NULL;
  caml_memprof_frame_slot *e;
  /* frametable: the cache was prepared, and has a table */
  if (c->frametable != NULL
      && (e = caml_memprof_callstack_probe(c, pc | CALLSTACK_ALLOC_LENS_TAG))) {
    memcpy(&alloc_len, &e->size, sizeof alloc_len);
    c->lens_pc[1] = c->lens_pc[0];
    c->lens[1] = c->lens[0];
    c->lens_pc[0] = pc;
    c->lens[0] = alloc_len;
  }
  return alloc_len;
}
#endif

/* The encoder's previous stack, when the sample trap left it to prev:
   the trap's encoder writes the record but not its stack (mpt_enc_alloc_
   record's keep_stack), which the walk's common case keeps as prev's
   location ids anyway (about 3 instructions a fresh frame saved).  Then
   enc_stack_lazy is set, and this writes them, outermost first, before
   anything reads the encoder's stack or changes prev otherwise than by
   that common case: finish_capture, the cache's clearing, the ordinary
   sample path, the check of the trap's stacks. */
static inline void
caml_memprof_callstack_sync_encoder(caml_memprof_callstack_cache *c)
{
  if (!c->enc_stack_lazy) return;
  c->enc_stack_lazy = 0;
  uint32_t i = c->prev_len;
  for (caml_memprof_walked_frame *f = c->inner; i > 0; f = f->outer)
    (*c->enc_stack)[--i] = f->loc;
}

/* The stack just captured was not given to the encoder (sample lost). */
static inline void
caml_memprof_callstack_not_encoded(caml_memprof_callstack_cache *c)
{
  c->prev_encoded = 0;
  c->quick_end = 0;
  c->window = 0;
}

/* The same stack through upstream's caml_get_callstack and [c->define]
   alone, into [ids] (room for [c->max]): the reference the tests compare
   the walk with (memprof_verify=1). */
int caml_memprof_capture_callstack_reference(caml_memprof_callstack_cache *c,
                                             uint32_t *ids,
                                             ptrdiff_t alloc_idx,
                                             int *truncated);

/* Forget every entry (the stream's location ids were reset). */
void caml_memprof_callstack_cache_clear(caml_memprof_callstack_cache *c);
void caml_memprof_callstack_cache_free(caml_memprof_callstack_cache *c);

#endif /* CAML_INTERNALS */
#endif /* CAML_MEMPROF_CALLSTACK_H */

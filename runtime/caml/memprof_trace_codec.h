/* memprof_trace_codec.h: encoder and decoder of the 5.3.0+memprof trace format.

   This is the one implementation of the format (docs/trace-format.md).  It is
   compiled into the OCaml runtime (which only encodes), into the ocaml-memprof
   tools and into the tests (which decode).  It depends on the C library and
   liblz4 only, never on the OCaml runtime, so that it builds on its own.

   Contracts
   - Encoding never allocates and never fails: the caller owns the output
     buffer and checks that MPT_MAX_EVENT_BYTES(frames) bytes are free
     before each event (mpt_enc_space).  An encoder holds the per-stream
     delta state (time, ids, previous callstack); one encoder per stream.
   - Decoding never trusts its input: every length and id is bounded before
     use; a malformed file yields MPT_ERR with a message, a file cut short
     yields its complete prefix and mpt_reader_truncated() != 0.
   - Thread safety: none needed; each object is used by one thread at a time. */

#ifndef MEMPROF_TRACE_CODEC_H
#define MEMPROF_TRACE_CODEC_H

#include "memprof_symbols.h"  /* the runtime's caml_ names */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Format constants (docs/trace-format.md, section "Layout") ---- */

#define MPT_MAGIC "OCMPTRCE"             /* first 8 bytes of the stream   */
#define MPT_MAGIC_LEN 8
#define MPT_FORMAT_VERSION 9   /* 2: cut stacks marked, location addresses and
                                  MAJOR_CYCLE statistics as differences;
                                  3: compact and repeated ALLOCs, COLLECT
                                  runs, MINOR_GC counts as differences;
                                  4: packed fresh frames, PROMOTE and
                                  COLLECT of the next id in one byte,
                                  MINOR_GC of the next count, kept
                                  ALLOC records in sets of two;
                                  5: a minor GC's fates as bits, the
                                  command line after the executable,
                                  definitions of the next id;
                                  6: stacks written deeper than the
                                  header's max_frames, which readers
                                  show cut at max_frames;
                                  7: heap snapshots with explicit ids
                                  (a sweep of the heap);
                                  8: runs of one location id among an
                                  ALLOC's fresh ids (MPT_RUN);
                                  9: a STACK_WINDOW's stack up to
                                  MPT_MAX_WINDOW frames */
#define MPT_CHUNK_HEADER_BYTES 8         /* u32 len, u8 type, u8 0, u16 stream */
#define MPT_MAX_CHUNK_PAYLOAD (1u << 20)  /* decoders reject larger chunks  */
#define MPT_MAX_FRAMES 4096              /* upper bound on captured frames */
/* Version 9: a STACK_WINDOW's stack holds up to twice that (the window
   adds the frames beyond a cut stack's outermost before the ALLOC after
   it drops the innermost ones it no longer has). */
#define MPT_WINDOW_FRAMES(max_frames) (2 * (max_frames))
#define MPT_MAX_WINDOW MPT_WINDOW_FRAMES(MPT_MAX_FRAMES)
#define MPT_MAX_STRING 4096              /* longest string in a trace      */
#define MPT_MAX_INLINED 64               /* entries of one location        */
/* Ids are dense: a stream's writer numbers its strings and locations 1, 2,
   3...  A decoder rejects an id more than this above the number the stream
   has defined, so that a corrupt id cannot make it allocate a huge table. */
#define MPT_ID_SLACK 65536

enum mpt_chunk_type {
  MPT_CHUNK_HEADER = 1,                  /* once, first                    */
  MPT_CHUNK_EVENTS = 2,                  /* one stream's events            */
  MPT_CHUNK_END = 3,                     /* clean end of trace             */
  MPT_CHUNK_SNAPSHOT = 4                 /* heap snapshot records          */
};

/* Allocation sources, as Gc.Memprof distinguishes them. */
enum mpt_source {
  MPT_SRC_MINOR = 0,    /* minor heap (OCaml code or C via caml_alloc_small) */
  MPT_SRC_MAJOR = 1,    /* allocated directly in the major heap              */
  MPT_SRC_CUSTOM = 2,   /* external memory of a custom block (bigarrays...)  */
  MPT_SRC_MARSHAL = 3,  /* block created by unmarshalling                    */
  MPT_SRC_COUNT = 4
};

/* Event kinds, as seen by decoders (encoded tags are in the .c file). */
enum mpt_event_kind {
  MPT_EV_ALLOC = 1,        /* id, wosize, nsamples, source, stack          */
  MPT_EV_PROMOTE,          /* id: sampled minor block survived a minor GC  */
  MPT_EV_COLLECT,          /* id: sampled block found dead                 */
  MPT_EV_MINOR_GC,         /* a minor collection (carries time for the
                              promotions/collections that follow)           */
  MPT_EV_MAJOR_CYCLE,      /* end of a major cycle, with heap statistics   */
  MPT_EV_COMPACT_BEGIN,
  MPT_EV_COMPACT_END,
  MPT_EV_DOMAIN_START,     /* arg = Domain.self () of the new domain       */
  MPT_EV_DOMAIN_STOP,      /* arg = Domain.self () of the domain           */
  MPT_EV_TRACE_START,      /* tracing (re)started (API, signal)            */
  MPT_EV_TRACE_STOP,       /* tracing stopped (API, signal, I/O error)     */
  MPT_EV_FORK,             /* arg = child pid                              */
  MPT_EV_LOST,             /* arg = samples that could not be recorded     */
  /* Heap snapshots (SNAPSHOT chunks; fields in mpt_event.snap) */
  MPT_EV_SNAP_BEGIN,       /* snap.seq, snap.anchor, arg = domains         */
  MPT_EV_SNAP_ROOT,        /* snap.root_kind/flags/label/detail/target     */
  MPT_EV_SNAP_BLOCK,       /* snap.block, tag, wosize, sample_id, edges    */
  MPT_EV_SNAP_EDGES,       /* more edges of snap.block (a long block)      */
  MPT_EV_SNAP_CUSTOM,      /* snap.block, label = identifier, ext_bytes    */
  MPT_EV_SNAP_END,         /* snap.pause_ns, total_blocks/edges, flags    */
  MPT_EV_SNAP_WALK,        /* snap.walk_mode, walk_ns, extra_bytes (before
                              END; absent before this record existed)     */
  MPT_EV_SNAP_IDS          /* snap.id_limit: the snapshot's ids are
                              explicit (right after BEGIN, see below)     */
};

/* Root kinds of a heap snapshot (docs/trace-format.md). */
enum mpt_root_kind {
  MPT_ROOT_GLOBAL = 0,     /* field [detail] of a module's global block    */
  MPT_ROOT_STACK = 1,      /* a live slot of an OCaml stack frame          */
  MPT_ROOT_LOCAL = 2,      /* C local roots (CAMLparam, CAMLlocal)         */
  MPT_ROOT_C_GLOBAL = 3,   /* caml_register_(generational_)global_root     */
  MPT_ROOT_FINALISER = 4,  /* Gc.finalise values and functions             */
  MPT_ROOT_THREAD = 5,     /* other systhreads of a domain                 */
  MPT_ROOT_MEMPROF = 6,    /* held by the profiler: never retaining        */
  MPT_ROOT_KIND_COUNT = 7
};
#define MPT_ROOT_NONRETAINING 1u  /* root flag: does not keep its target */
#define MPT_SNAP_INCOMPLETE 1u    /* END flag: the walk was cut short     */
/* WALK record: where the walk ran. */
enum mpt_snap_walk_mode {
  MPT_WALK_PAUSE = 0,      /* in the pause (memprof_snapshot_fork=0)       */
  MPT_WALK_FORK = 1,       /* in a forked child, the program running on    */
  MPT_WALK_FORK_REFUSED = 2, /* in the pause: the child could not be made  */
  MPT_WALK_MODE_COUNT = 3
};
#define MPT_SNAP_MAX_EDGES 4096   /* edges per BLOCK or EDGES record      */
#define MPT_SNAP_EDGE_SLOTS 16    /* explicit ids: edge indices told apart */
#define MPT_SNAP_MAX_RECORD_BYTES (48 + 10 * (size_t)MPT_SNAP_MAX_EDGES)

/* Heap statistics carried by MPT_EV_MAJOR_CYCLE, in words. */
typedef struct {
  uint64_t heap_words;          /* major heap size                       */
  uint64_t live_words;          /* words marked live by the cycle        */
  uint64_t minor_collections;   /* totals since program start            */
  uint64_t major_collections;
  uint64_t compactions;
  uint64_t promoted_words;
} mpt_heap_stats;

/* ---- Varints (LEB128); exposed for the tests and the CTF tools ---- */

static inline uint8_t *mpt_put_uvarint(uint8_t *p, uint64_t v)
{
  while (v >= 0x80) { *p++ = (uint8_t)(v | 0x80); v >>= 7; }
  *p++ = (uint8_t)v;
  return p;
}

static inline uint64_t mpt_zigzag(int64_t v)
{ return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }

static inline int64_t mpt_unzigzag(uint64_t v)
{ return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

/* ---- Trace header ---- */

typedef struct {
  uint32_t format_version;
  uint32_t word_size;           /* 64 */
  uint32_t flags;               /* MPT_FLAG_* */
  double sampling_rate;         /* lambda, samples per word */
  uint32_t max_frames;          /* the tracer's cap; version 6: what
                                   readers show of a deeper stack      */
  uint32_t time_unit_ns;        /* resolution of event times */
  uint64_t pid;
  uint64_t ppid;
  uint64_t start_wall_ns;       /* Unix epoch, ns */
  const char *executable;
  const char *hostname;
  const char *ocaml_version;
  const char *command_line;     /* argv joined by spaces, truncated */
} mpt_trace_info;

#define MPT_FLAG_BYTECODE 1u
#define MPT_FLAG_COMPRESSED 2u  /* informational: the file uses LZ4 frames */
/* Version 5, on the wire only (readers clear it): the header's command
   line is what follows the executable's path, with which it starts. */
#define MPT_FLAG_COMMAND_AFTER_EXE 4u

/* ---- Encoder ---- */

/* Upper bound of one encoded event with a callstack of [frames] entries. */
#define MPT_MAX_EVENT_BYTES(frames) (64 + 10 * (size_t)(frames))
/* Upper bound of one encoded location or string definition. */
#define MPT_MAX_DEF_BYTES (32 + MPT_MAX_STRING + MPT_MAX_INLINED * 60)

typedef struct {
  uint8_t *start, *pos, *end;   /* output buffer owned by the caller */
  uint64_t last_time;           /* in time units, since trace start   */
  uint64_t last_alloc_id;
  uint64_t last_gc_id;
  uint64_t last_minor_gc;       /* previous MINOR_GC's count           */
  uint64_t last_loc_address;    /* previous location definition's     */
  mpt_heap_stats last_stats;    /* previous MAJOR_CYCLE's             */
  uint32_t prev_len;            /* previous allocation's stack,       */
                                /* outermost frame first              */
  uint32_t prev_cap;
  uint32_t *prev_stack;         /* caller-provided, prev_cap entries  */
  uint32_t *stack_base;         /* prev_stack lies in [stack_base,    */
  uint32_t stack_room;          /* stack_base + stack_room), where a
                                   STACK_WINDOW moves it              */
  uint64_t repeat[32];          /* recent compact ALLOC records, see
                                   MPT_TAG_ALLOC_REPEAT                 */
  uint32_t mtf[3];              /* packed frames' list, see
                                   MPT_PACK_MIN_FRESH                   */
  uint32_t pack_min_fresh;      /* the writer's choice, see
                                   MPT_PACK_MIN_FRESH                   */
  uint32_t last_str_id, last_loc_id;  /* last definitions' (version 5:
                                   the next id is not written)          */
} mpt_encoder;

/* [stack_buf] holds [stack_cap] entries and remembers the previous stack. */
void mpt_enc_init(mpt_encoder *e, uint8_t *buf, size_t len,
                  uint32_t *stack_buf, uint32_t stack_cap);
/* The previous stack moves within [room] >= prev_cap entries at [buf]
   (a new, empty one): a STACK_WINDOW then moves where it starts rather
   than its entries, but when it reaches an end of the room. */
void mpt_enc_stack_room(mpt_encoder *e, uint32_t *buf, uint32_t room);
/* Start a new chunk body in [buf]; delta state carries over chunks. */
void mpt_enc_reset_buffer(mpt_encoder *e, uint8_t *buf, size_t len);
static inline size_t mpt_enc_space(const mpt_encoder *e)
{ return (size_t)(e->end - e->pos); }
static inline size_t mpt_enc_used(const mpt_encoder *e)
{ return (size_t)(e->pos - e->start); }

/* Events.  [time] is in time units since trace start, non-decreasing per
   encoder.  [stack] holds location ids (>= 1), innermost frame first;
   [truncated] says that the stack had more frames than the [len] given
   (cut at the tracer's frame cap).  The outermost frames shared with the
   previous allocation's stack are encoded as a count. */
void mpt_enc_alloc(mpt_encoder *e, uint64_t time, uint64_t id,
                   uint64_t wosize, uint32_t nsamples, enum mpt_source src,
                   int truncated, const uint32_t *stack, uint32_t len);
/* mpt_enc_alloc for an encoder that never packs (pack_min_fresh is
   UINT32_MAX): the same bytes, and no call out of this file (the
   runtime's sample trap, see memprof_trap.h). */
void mpt_enc_alloc_unpacked(mpt_encoder *e, uint64_t time, uint64_t id,
                            uint64_t wosize, uint32_t nsamples,
                            enum mpt_source src, int truncated,
                            const uint32_t *stack, uint32_t len);
/* The same event when the caller knows which part of the stack is shared:
   the stack is [fresh_ids] (innermost first) followed by the outermost
   [common] frames of the previous allocation's stack (common <= the
   previous stack's length).  Costs nothing per shared frame. */
static inline void
mpt_enc_alloc_shared(mpt_encoder *e, uint64_t time, uint64_t id,
                     uint64_t wosize, uint32_t nsamples,
                     enum mpt_source src, int truncated,
                     const uint32_t *fresh_ids, uint32_t fresh,
                     uint32_t common);
/* A cut stack's window moved: the previous allocation's stack loses its
   outermost [drop] frames and gains [outer] (innermost first) beyond what
   remains, before the next ALLOC counts its common frames from it (the
   STACK_WINDOW record, see docs/trace-format.md).  The result holds at
   most twice prev_cap frames, and at most the room (mpt_enc_stack_room):
   a stack that returned from beyond a cut one gains the frames beyond
   before the ALLOC leaves the innermost it no longer has.  The innermost frames
   of a deep stack, kept by a cut, slide along the stack as it changes
   depth, and without this every cut sample wrote all its frames again.
   Costs a move of the previous stack's kept part, not a frame written. */
void mpt_enc_stack_window(mpt_encoder *e, uint32_t drop,
                          const uint32_t *outer, uint32_t n);
/* mpt_enc_alloc_shared, with [may_pack] 0 for an encoder that never packs
   (pack_min_fresh is UINT32_MAX): the same bytes, and no call out of the
   inline code (the runtime's sample trap, see memprof_trap.h).  With
   [keep_stack] 0, the previous stack's entries (prev_stack) are left as
   they were, only its length (prev_len) follows: for a caller that keeps
   the stack itself, and writes it there, outermost first, before the
   encoder reads it again (mpt_enc_common_frames, mpt_enc_alloc, a record
   with [keep_stack] 1).  Both constants. */
static inline void
mpt_enc_alloc_record(mpt_encoder *e, uint64_t time, uint64_t id,
                     uint64_t wosize, uint32_t nsamples,
                     enum mpt_source src, int truncated,
                     const uint32_t *fresh_ids, uint32_t fresh,
                     uint32_t common, const int may_pack,
                     const int keep_stack);
/* How many outermost frames of [stack] (innermost first, [len] frames,
   len <= prev_cap) the previous allocation's stack shares: what
   mpt_enc_alloc sends as a count. */
static inline uint32_t mpt_enc_common_frames(const mpt_encoder *e,
                                             const uint32_t *stack,
                                             uint32_t len);
/* A sampled block survived a minor GC, or was found dead. */
static inline void mpt_enc_promote(mpt_encoder *e, uint64_t id);
static inline void mpt_enc_collect(mpt_encoder *e, uint64_t id);
/* A minor GC (the MINOR_GC event at [time], the [count]-th) that found
   the stream's young samples [id, id + n), 1 <= n <= MPT_MAX_FATES,
   promoted (bit i of [fates] for id + i) or dead: the MINOR_GC, PROMOTE
   and COLLECT events in the fewest bytes, version 5's fates as bits (in
   the MINOR_GC's tag, or a FATES record) or the records one by one. */
#define MPT_MAX_FATES 56
void mpt_enc_minor_gc_fates(mpt_encoder *e, uint64_t time, uint64_t count,
                            uint64_t id, uint64_t fates, uint32_t n);
void mpt_enc_simple(mpt_encoder *e, enum mpt_event_kind kind,
                    uint64_t time, uint64_t arg);
void mpt_enc_major_cycle(mpt_encoder *e, uint64_t time,
                         const mpt_heap_stats *s);
/* A cycle end whose statistics would repeat the last ones recorded (at
   most STATS_INTERVAL old): decoders give the stream's last statistics,
   with [major_collections] updated. */
void mpt_enc_major_cycle_mark(mpt_encoder *e, uint64_t time,
                              uint64_t major_collections);
/* Definitions, emitted before first use by the stream. */
void mpt_enc_string(mpt_encoder *e, uint32_t str_id, const char *s, size_t len);
typedef struct {
  uint32_t file, function;      /* string ids (encoder) or strings (decoder) */
  uint32_t line, start_char, end_char;
} mpt_loc_entry_ids;
void mpt_enc_location(mpt_encoder *e, uint32_t loc_id, uint64_t address,
                      const mpt_loc_entry_ids *entries, uint32_t n);

/* Heap snapshot records, in SNAPSHOT chunks (one snapshot at a time per
   trace).  Block ids are implicit: 1, 2, ... in the order blocks are
   written; a root or an edge names its target by id, and a target not
   seen before must be the next id (assigned + 1), so a walk that numbers
   blocks in discovery order (breadth first) writes most edges as one
   byte.  Each record needs at most MPT_SNAP_MAX_RECORD_BYTES.
   Explicit ids (mpt_enc_snap_ids, right after BEGIN): for a walk that
   names blocks by where they are (the heap swept in address order) and
   writes them in id order, some ids left without a block
   (mpt_enc_snap_skip); a target is any id up to the limit, written
   relative to the target of the same edge index (the block's first,
   second, ... sixteenth and later edges) written last, where a sweep's
   neighbouring blocks point to neighbouring blocks (a root's: relative
   to the next block's id). */
typedef struct {
  uint64_t assigned;            /* highest id named so far              */
  uint64_t emitted;             /* blocks written so far                */
  uint64_t last_sample;         /* previous SAMPLE record's alloc id    */
  uint64_t next_id;             /* explicit ids: the next block's id;
                                   0: implicit ids                      */
  uint64_t last_target[MPT_SNAP_EDGE_SLOTS]; /* explicit ids: by edge
                                   index, the last target written       */
  uint64_t block_edges;         /* edges of the last mpt_enc_snap_block
                                   and its mpt_enc_snap_edges           */
} mpt_snap_encoder;
void mpt_enc_snap_begin(mpt_encoder *e, mpt_snap_encoder *s, uint64_t time,
                        uint64_t seq, uint64_t anchor, uint32_t ndomains);
void mpt_enc_snap_string(mpt_encoder *e, uint32_t str_id, const char *str,
                         size_t len);
void mpt_enc_snap_root(mpt_encoder *e, mpt_snap_encoder *s,
                       enum mpt_root_kind kind, uint32_t flags,
                       uint32_t label_str_id, uint64_t detail, uint64_t target);
/* The next block written is the sampled allocation [alloc_id]. */
void mpt_enc_snap_sample(mpt_encoder *e, mpt_snap_encoder *s, uint64_t alloc_id);
/* Block number s->emitted + 1, with its first [n] <= MPT_SNAP_MAX_EDGES
   edges; edges of index >= weak_from (UINT64_MAX: none) are weak. */
void mpt_enc_snap_block(mpt_encoder *e, mpt_snap_encoder *s, uint32_t tag,
                        uint64_t wosize, const uint64_t *targets, uint32_t n,
                        uint64_t weak_from);
/* More edges of the block just written. */
void mpt_enc_snap_edges(mpt_encoder *e, mpt_snap_encoder *s,
                        const uint64_t *targets, uint32_t n);
/* [block]: the number of blocks written before it, plus one (with
   explicit ids, the block just written: s->emitted). */
void mpt_enc_snap_custom(mpt_encoder *e, mpt_snap_encoder *s, uint64_t block,
                         uint32_t ident_str_id, uint64_t ext_bytes);
/* The snapshot's ids are explicit, from 1 to [limit] <= UINT32_MAX:
   right after BEGIN, before any root. */
void mpt_enc_snap_ids(mpt_encoder *e, mpt_snap_encoder *s, uint64_t limit);
/* Explicit ids: the next [n] >= 1 ids have no block. */
void mpt_enc_snap_skip(mpt_encoder *e, mpt_snap_encoder *s, uint64_t n);
/* A target id, after the highest id named so far [*assigned]: 0 for the
   next fresh id (the common case of a breadth-first walk, written without
   the general varint path), negative for ids named before. */
static inline uint8_t *mpt_snap_put_target(uint8_t *p, uint64_t *assigned,
                                           uint64_t t)
{
  uint64_t next = *assigned + 1;
  if (t == next) { *p++ = 0; *assigned = t; return p; }
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(t - next)));
  if (t > *assigned) *assigned = t;
  return p;
}
/* Explicit ids: target [t] of a block's edge of index [i]. */
static inline uint8_t *mpt_snap_put_explicit(uint8_t *p, mpt_snap_encoder *s,
                                             uint64_t i, uint64_t t)
{
  uint64_t *last = &s->last_target[i < MPT_SNAP_EDGE_SLOTS
                                   ? i : MPT_SNAP_EDGE_SLOTS - 1];
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(t - *last)));
  *last = t;
  return p;
}
/* A BLOCK record written in place, its targets as they are found (the
   runtime's walk), for the common block: tag below MPT_SNAP_SMALL_TAG,
   fewer than MPT_SNAP_SMALL_WOSIZE fields, no weak edge.  Its tag and
   wosize are one byte each, and so is its edge count, which
   mpt_snap_small_block_end fills in; the bytes are mpt_enc_snap_block's.
   The head takes 3 bytes, each target at most 10.  Returns where the
   targets go (mpt_snap_put_target, or with explicit ids
   mpt_snap_put_explicit); no EDGES record follows such a block. */
#define MPT_SNAP_SMALL_TAG 0x80
#define MPT_SNAP_SMALL_WOSIZE 0x80
static inline uint8_t *mpt_snap_small_block_begin(uint8_t *p,
                                                  mpt_snap_encoder *s,
                                                  uint32_t tag,
                                                  uint32_t wosize)
{
  p[0] = (uint8_t)tag;
  p[1] = (uint8_t)wosize;
  s->emitted++;
  if (s->next_id) s->next_id++;
  return p + 3;
}
/* A BLOCK record's tag and wosize, at [p] (at most 12 bytes): the
   block is counted; its edge count and edges follow (mpt_enc_snap_block
   writes them; a leaf, such as a string, has one byte: 0). */
static inline uint8_t *mpt_snap_block_head(uint8_t *p, mpt_snap_encoder *s,
                                           uint32_t tag, uint64_t wosize)
{
  if (tag < MPT_SNAP_SMALL_TAG) *p++ = (uint8_t)tag;
  else { *p++ = MPT_SNAP_SMALL_TAG; *p++ = (uint8_t)tag; }
  p = mpt_put_uvarint(p, wosize);
  s->emitted++;
  if (s->next_id) s->next_id++;
  s->block_edges = 0;
  return p;
}
/* [head]: mpt_snap_small_block_begin's [p]; [n] targets were written. */
static inline void mpt_snap_small_block_end(uint8_t *head, uint32_t n)
{
  head[2] = (uint8_t)n;
}
/* Where and how long the walk ran, just before END: [mode] an enum
   mpt_snap_walk_mode, [walk_ns] the walk's time (from the roots to the
   last block), [extra_bytes] a forked child's private memory at its end
   (its tables and the pages either process wrote since the fork). */
void mpt_enc_snap_walk(mpt_encoder *e, uint32_t mode, uint64_t walk_ns,
                       uint64_t extra_bytes);
void mpt_enc_snap_end(mpt_encoder *e, mpt_snap_encoder *s, uint64_t time,
                      uint64_t pause_ns, uint64_t nedges, uint32_t flags);

/* Serialise a trace header chunk / end chunk (whole chunk, with its
   8-byte chunk header) into [buf] of [len] bytes; returns bytes used, or 0
   if [len] is too small. */
size_t mpt_write_header_chunk(uint8_t *buf, size_t len,
                              const mpt_trace_info *info);
size_t mpt_write_end_chunk(uint8_t *buf, size_t len, uint64_t end_time,
                           uint64_t total_samples, uint64_t lost_samples);
/* Fill in the 8-byte chunk header in front of a body of [body_len] bytes. */
void mpt_chunk_header(uint8_t *hdr, enum mpt_chunk_type type,
                      uint16_t stream, uint32_t body_len);

/* LZ4: compress [src] into one independent LZ4 frame in [dst].  Returns
   the frame size, or 0 if [dst_cap] < mpt_frame_bound(len) or on error.
   [state] is NULL, or a compression state kept from one frame to the next
   (used by one thread at a time): with one, a frame does not clear 16 KB
   of tables first.  mpt_frame_state_new returns NULL if out of memory.
   [acceleration] is LZ4's: 1 for its best ratio in fast mode, more for
   fewer instructions and a larger frame; any value decodes the same. */
typedef struct mpt_frame_state mpt_frame_state;
mpt_frame_state *mpt_frame_state_new(void);
void mpt_frame_state_free(mpt_frame_state *state);
size_t mpt_frame_bound(size_t len);
size_t mpt_frame_compress(mpt_frame_state *state, uint8_t *dst, size_t dst_cap,
                          const uint8_t *src, size_t len, int acceleration);
/* The same frame with [src] stored as is (an uncompressed block, which
   every LZ4 decoder reads): no compression state to clear, for chunks
   written once that hardly compress (the header, END).  Returns the frame
   size, MPT_STORED_FRAME_OVERHEAD + [len], or 0 if [dst_cap] is smaller
   or [len] is 0 or more than MPT_STORED_FRAME_MAX. */
#define MPT_STORED_FRAME_OVERHEAD 15
#define MPT_STORED_FRAME_MAX (64 * 1024)
size_t mpt_frame_store(uint8_t *dst, size_t dst_cap,
                       const uint8_t *src, size_t len);

/* The encoders of the events of every sample are inline: the tracer calls
   them on its sample path, where a call and its arguments cost as much as
   the encoding.  Their tags (the others are in the .c file): */
#define MPT_TAG_PROMOTE 0x20
#define MPT_TAG_COLLECT 0x21
#define MPT_TAG_COLLECT_RUN 0x22   /* version 3 */
/* Version 4: PROMOTE and COLLECT of last_gc_id + 1, no field (a minor GC
   goes through a domain's young samples in id order). */
#define MPT_TAG_PROMOTE_NEXT 0x23
#define MPT_TAG_COLLECT_NEXT 0x24
/* The longest run one COLLECT_RUN record holds. */
#define MPT_MAX_COLLECT_RUN 65536
/* Version 3's compact ALLOC, one byte for what most samples share:
   0x80 | fresh << 4 (0-6; 7: the count follows) | cut << 3 | unit << 2 |
   source, where unit means nsamples = 1 and id = last_alloc_id + 1; then
   the fields, and last the time delta. */
#define MPT_TAG_ALLOC_COMPACT 0x80
/* ... or, 0x60 + slot then the time delta: the same bytes (tag and fields)
   as the compact ALLOC kept in that slot of the stream's 32, where records
   of at most 7 bytes are kept.  Most samples of a site repeat the record
   of an earlier one: the same size, and the same change from the previous
   stack.  Version 3: a record goes to slot mpt_repeat_slot.  Version 4:
   the slots are 16 sets of two, most recent first (a site's few records
   no longer evict each other when two of them hash alike: a quarter more
   repeats on a recursive program): a record goes to the first slot of
   set mpt_repeat_set, the one there moving to the second; a repeat of
   the second swaps them. */
#define MPT_TAG_ALLOC_REPEAT 0x60
#define MPT_REPEAT_MAX 7
/* Version 4: a compact ALLOC's `common` field is common << 1 | packed.
   Packed fresh frames are 2-bit codes, four to a byte, naming entries of
   a move-to-front list of three ids that the stream keeps, then the
   escaped ids (docs/trace-format.md).  Deep recursion through two or
   three call sites (a tree builder, Map.add) writes its frames in a
   quarter of the bytes.  By default (mpt_enc_init) the encoder tries
   packing a record of this many fresh frames or more that is not the
   repeat of a kept one (packing cannot beat a repeat, and its bytes depend
   on the list: it would make fewer records repeat).  Trying costs about
   as much again as writing the frames; a writer for which instructions
   weigh more than bytes sets pack_min_fresh to UINT32_MAX (never). */
#define MPT_PACK_MIN_FRESH 4
/* Version 8: among a record's plain fresh ids (not packed ones), MPT_RUN
   (never a location id) and then a varint n >= 1 stand for n more frames
   of the id just before, in the same record (writers use it for n >= 2,
   where it is never longer).  A recursion's frames (one return
   address, one id) cost two or three bytes whatever its depth, and a
   compare each instead of a varint: deep_list in bench/ (4,000
   frames, 1e-3, callgrind) 9,902 -> 9,167 instructions a sample, 10.8
   -> 8.6 bytes of trace. */
#define MPT_RUN 0
/* Writers look for runs in records of this many fresh frames or more
   (the test of each id cost shallow samples, with their few fresh
   frames, 11 to 21 instructions: short_lived, leaky_server in bench/). */
#define MPT_RUN_MIN_FRESH 16

/* How many of ids[i], ids[i + 1], ... before ids[n] are [loc]: four a
   turn, in two 8-byte compares (general registers only: the sample trap
   inlines this), where a compare each cost 5 instructions an id, the most
   of the encoder's on deep_list in bench/. */
static inline __attribute__((always_inline)) uint32_t
mpt_run_length(const uint32_t *ids, uint32_t i, uint32_t n, uint32_t loc)
{
  uint64_t pair = (uint64_t)loc * 0x100000001ull;
  uint32_t j = i;
  for (; n - j >= 4; j += 4) {
    uint64_t a, b;
    memcpy(&a, ids + j, 8);
    memcpy(&b, ids + j + 2, 8);
    if ((a ^ pair) | (b ^ pair)) break;
  }
  while (j < n && ids[j] == loc) j++;
  return j - i;
}

/* [n] location ids, plain, from [p] on, with runs (MPT_RUN, versions 8
   and 9): each id, and two or more of the same id after it as MPT_RUN
   and their count.  An ALLOC's fresh ids, a STACK_WINDOW's. */
static inline __attribute__((always_inline)) uint8_t *
mpt_put_ids_with_runs(uint8_t *p, const uint32_t *ids, uint32_t n)
{
  for (uint32_t i = 0; i < n;) {
    uint32_t loc = ids[i++];     /* read once: p's bytes may alias it */
    p = mpt_put_uvarint(p, loc);
    if (i < n && ids[i] == loc) {
      uint32_t same = mpt_run_length(ids, i, n, loc);
      if (same >= 2) {
        *p++ = MPT_RUN;
        p = mpt_put_uvarint(p, same);
        i += same;
      }
    }
  }
  return p;
}

/* The record at [rec], not a repeat, its [fresh] ids written plain from
   [frames] to [end] (its common field at [field]): packed in their place
   when that is shorter, then kept or repeated as the record finally is.
   Returns the record's new end. */
uint8_t *mpt_enc_pack_record(mpt_encoder *e, uint8_t *rec, uint8_t *field,
                             uint8_t *frames, uint8_t *end,
                             const uint32_t *fresh_ids, uint32_t fresh);

/* The key of the record at [rec] of [len] bytes (at most 7; 8 readable):
   its bytes, little-endian, and its length in the top byte. */
static inline __attribute__((always_inline)) uint64_t
mpt_repeat_key(const uint8_t *rec, size_t len)
{
  uint64_t v;
  memcpy(&v, rec, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return (v & (((uint64_t)1 << (8 * len)) - 1)) | (uint64_t)len << 56;
}
static inline unsigned mpt_repeat_slot(uint64_t key)       /* version 3 */
{
  return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 59);
}
static inline __attribute__((always_inline)) unsigned
mpt_repeat_set(uint64_t key)                                /* version 4 */
{
  return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 60);
}
/* Version 4: keep [key] in [set] of [kept]; use slot [slot] of [kept]
   (a repeat), which returns its key. */
static inline __attribute__((always_inline)) void
mpt_repeat_keep(uint64_t *kept, unsigned set, uint64_t key)
{
  kept[2 * set + 1] = kept[2 * set];
  kept[2 * set] = key;
}
static inline __attribute__((always_inline)) uint64_t
mpt_repeat_use(uint64_t *kept, unsigned slot)
{
  uint64_t k = kept[slot];
  if (slot & 1) { kept[slot] = kept[slot - 1]; kept[slot - 1] = k; }
  return k;
}
/* Whether the record at [rec] of [len] <= MPT_REPEAT_MAX bytes repeats
   one kept in its set: then its first byte becomes the repeat's tag.
   Else [*key] is to be kept in [*set] (mpt_repeat_keep). */
static inline __attribute__((always_inline)) int
mpt_repeated(mpt_encoder *e, uint8_t *rec, size_t len, uint64_t *key,
             unsigned *set)
{
  *key = mpt_repeat_key(rec, len);
  *set = mpt_repeat_set(*key);
  unsigned slot = 2 * *set;
  if (e->repeat[slot] != *key && e->repeat[++slot] != *key) return 0;
  mpt_repeat_use(e->repeat, slot);
  *rec = (uint8_t)(MPT_TAG_ALLOC_REPEAT + slot);
  return 1;
}

static inline uint32_t mpt_enc_common_frames(const mpt_encoder *e,
                                             const uint32_t *stack,
                                             uint32_t len)
{
  uint32_t common = 0, most = len < e->prev_len ? len : e->prev_len;
  while (common < most && stack[len - 1 - common] == e->prev_stack[common])
    common++;
  return common;
}

/* The previous stack is kept outermost frame first, so that the part a
   new stack shares with it stays where it is and only the fresh frames
   are written.  [may_pack] (a constant): whether the encoder may pack. */
static inline __attribute__((always_inline)) void
mpt_enc_alloc_record(mpt_encoder *e, uint64_t time, uint64_t id,
                     uint64_t wosize, uint32_t nsamples,
                     enum mpt_source src, int truncated,
                     const uint32_t *fresh_ids, uint32_t fresh,
                     uint32_t common, const int may_pack,
                     const int keep_stack)
{
  if (common > e->prev_len) common = e->prev_len;
  if (fresh > e->prev_cap - common) fresh = e->prev_cap - common;
  int unit = nsamples == 1 && id == e->last_alloc_id + 1;
  uint8_t *rec = e->pos, *p = rec;
  *p++ = (uint8_t)(MPT_TAG_ALLOC_COMPACT | (fresh < 7 ? fresh : 7) << 4
                   | (truncated ? 8 : 0) | (unit ? 4 : 0) | src);
  if (!unit) {
    p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(id - e->last_alloc_id)));
    p = mpt_put_uvarint(p, nsamples);
  }
  e->last_alloc_id = id;
  p = mpt_put_uvarint(p, wosize);
  uint8_t *field = p;
  p = mpt_put_uvarint(p, (uint64_t)common << 1);
  if (fresh >= 7) p = mpt_put_uvarint(p, fresh);
  uint8_t *frames = p;
  uint32_t *ps = e->prev_stack + common + fresh;
  if (__builtin_expect(fresh < MPT_RUN_MIN_FRESH, 1)) {
    for (uint32_t i = 0; i < fresh; i++) {
      uint32_t loc = fresh_ids[i];   /* read once: p's bytes may alias it */
      if (keep_stack) *--ps = loc;
      p = mpt_put_uvarint(p, loc);
    }
  } else {
    /* Version 8: a recursion's repeated id, as a run (see MPT_RUN). */
    p = mpt_put_ids_with_runs(p, fresh_ids, fresh);
    if (keep_stack)
      for (uint32_t i = 0; i < fresh; i++) *--ps = fresh_ids[i];
  }
  e->prev_len = common + fresh;
  /* The caller left MPT_MAX_EVENT_BYTES (at least 64) free: 8 bytes of
     the record can be read. */
  if (p - rec <= MPT_REPEAT_MAX) {
    uint64_t k;
    unsigned i;
    if (mpt_repeated(e, rec, (size_t)(p - rec), &k, &i))
      p = rec + 1;
    else if (!may_pack || fresh < e->pack_min_fresh)
      mpt_repeat_keep(e->repeat, i, k);
    else
      p = mpt_enc_pack_record(e, rec, field, frames, p, fresh_ids, fresh);
  } else if (may_pack && fresh >= e->pack_min_fresh) {
    p = mpt_enc_pack_record(e, rec, field, frames, p, fresh_ids, fresh);
  }
  uint64_t dt = time > e->last_time ? time - e->last_time : 0;
  e->last_time += dt;      /* times never go backwards in a stream: clamped */
  e->pos = mpt_put_uvarint(p, dt);
}

static inline void
mpt_enc_alloc_shared(mpt_encoder *e, uint64_t time, uint64_t id,
                     uint64_t wosize, uint32_t nsamples,
                     enum mpt_source src, int truncated,
                     const uint32_t *fresh_ids, uint32_t fresh,
                     uint32_t common)
{
  mpt_enc_alloc_record(e, time, id, wosize, nsamples, src, truncated,
                       fresh_ids, fresh, common, 1, 1);
}

static inline void mpt_enc_gc_id(mpt_encoder *e, int tag, int next_tag,
                                 uint64_t id)
{
  if (id == e->last_gc_id + 1) {
    *e->pos++ = (uint8_t)next_tag;
  } else {
    *e->pos++ = (uint8_t)tag;
    e->pos = mpt_put_uvarint(e->pos, mpt_zigzag((int64_t)(id - e->last_gc_id)));
  }
  e->last_gc_id = id;
}
static inline void mpt_enc_promote(mpt_encoder *e, uint64_t id)
{ mpt_enc_gc_id(e, MPT_TAG_PROMOTE, MPT_TAG_PROMOTE_NEXT, id); }
static inline void mpt_enc_collect(mpt_encoder *e, uint64_t id)
{ mpt_enc_gc_id(e, MPT_TAG_COLLECT, MPT_TAG_COLLECT_NEXT, id); }
/* COLLECTs of ids [id, id + n), 1 <= n <= MPT_MAX_COLLECT_RUN: a minor GC
   finds most of a domain's young samples dead, and their ids follow each
   other. */
static inline void mpt_enc_collect_run(mpt_encoder *e, uint64_t id, uint32_t n)
{
  if (n == 1) { mpt_enc_collect(e, id); return; }
  *e->pos++ = MPT_TAG_COLLECT_RUN;
  e->pos = mpt_put_uvarint(e->pos, mpt_zigzag((int64_t)(id - e->last_gc_id)));
  e->pos = mpt_put_uvarint(e->pos, n);
  e->last_gc_id = id + n - 1;
}

/* ---- Decoder ---- */

typedef struct {
  const char *file;             /* "" when unknown */
  const char *function;
  uint32_t line, start_char, end_char;
} mpt_loc_entry;

typedef struct {
  uint64_t address;             /* code address / pc, 0 when unknown     */
  uint32_t n;                   /* inlined chain, innermost first, >= 0  */
  const mpt_loc_entry *entries;
} mpt_location;

typedef struct {
  enum mpt_event_kind kind;
  uint32_t stream;              /* domain slot that recorded the event   */
  uint64_t time_ns;             /* since trace start                     */
  uint64_t id;                  /* ALLOC, PROMOTE, COLLECT               */
  uint64_t wosize;              /* ALLOC */
  uint32_t nsamples;            /* ALLOC */
  enum mpt_source source;       /* ALLOC */
  int truncated;                /* ALLOC: the stack was cut at the frame
                                   cap; its last entry is then the
                                   MPT_TRUNCATED_FRAME location          */
  uint32_t stack_len;           /* ALLOC: global location ids,           */
  const uint32_t *stack;        /*   innermost first; valid until next   */
  uint64_t arg;                 /* DOMAIN_*, FORK, LOST                  */
  mpt_heap_stats heap;          /* MAJOR_CYCLE                           */
  struct {                      /* SNAP_* events                         */
    uint64_t seq;               /* BEGIN: snapshot number in the process */
    uint64_t anchor;            /* BEGIN: runtime address of caml_globals
                                   (0 in bytecode), to resolve module
                                   block addresses with the executable's
                                   symbol table                          */
    uint64_t block;             /* BLOCK, EDGES, CUSTOM: block id (1..)  */
    uint32_t tag;               /* BLOCK (size in ev.wosize)             */
    uint64_t sample_id;         /* BLOCK: ALLOC id of this block, or 0   */
    uint32_t nedges;            /* BLOCK, EDGES: edges in this record    */
    const uint64_t *edges;      /*   target block ids; valid until next  */
    uint64_t edge_base;         /* EDGES: index of edges[0] in the block */
    uint64_t weak_from;         /* BLOCK, EDGES: edge indices >= this are
                                   weak (ephemeron keys); UINT64_MAX none */
    uint32_t root_kind;         /* ROOT: enum mpt_root_kind              */
    uint32_t flags;             /* ROOT: MPT_ROOT_*; END: MPT_SNAP_*     */
    const char *label;          /* ROOT: label; CUSTOM: identifier; valid
                                   for the reader's lifetime              */
    uint64_t detail;            /* ROOT: field index (GLOBAL), domain... */
    uint64_t target;            /* ROOT: block id                        */
    uint64_t ext_bytes;         /* CUSTOM: out-of-heap bytes, 0 unknown  */
    uint64_t pause_ns;          /* END: world stopped this long          */
    uint32_t walk_mode;         /* WALK: enum mpt_snap_walk_mode         */
    uint64_t walk_ns;           /* WALK: the walk's time                 */
    uint64_t extra_bytes;       /* WALK: a forked child's private memory */
    uint64_t total_blocks, total_edges; /* END: totals of the snapshot */
    uint64_t id_limit;          /* IDS: block ids are explicit, 1..this:
                                   BLOCK's snap.block is its own, some
                                   ids have no block, targets may come
                                   before their block                    */
  } snap;
} mpt_event;

typedef struct mpt_reader mpt_reader;

/* Function name of the location that ends every cut stack. */
#define MPT_TRUNCATED_FRAME "<truncated>"
/* Function name of the last entry (with no file) of a callback frame's
   location: the frame of a closure that a frame of the stack holds
   (memprof_callbacks=N; docs/trace-format.md, "Callback frames"). */
#define MPT_CALLBACK_MARKER "<callback>"

enum { MPT_END = 0, MPT_OK = 1, MPT_ERR = -1 };

/* Open a trace file (LZ4 frames or uncompressed; detected by magic).
   Returns NULL with a message in [err] on failure. */
mpt_reader *mpt_reader_open(const char *path, char *err, size_t errlen);
/* Same, from a memory buffer that must outlive the reader (fuzzing). */
mpt_reader *mpt_reader_open_mem(const uint8_t *data, size_t len,
                                char *err, size_t errlen);
const mpt_trace_info *mpt_reader_info(const mpt_reader *r);
/* Next event: MPT_OK (ev filled), MPT_END, or MPT_ERR (see _error). */
int mpt_reader_next(mpt_reader *r, mpt_event *ev);
/* Locations get dense global ids 1..count, merged across streams by
   content.  Valid for the reader's lifetime. */
uint32_t mpt_reader_location_count(const mpt_reader *r);
const mpt_location *mpt_reader_location(const mpt_reader *r, uint32_t id);
const char *mpt_reader_error(const mpt_reader *r);
/* Non-zero once the reader has met a cut-off end (no END chunk, or an
   incomplete last frame/chunk). */
int mpt_reader_truncated(const mpt_reader *r);
/* Bytes of the file consumed so far (LZ4 frames as stored). */
uint64_t mpt_reader_bytes_read(const mpt_reader *r);
/* Following a file while it is written: with [on], the current end of the
   file is not the end of the trace.  A chunk or LZ4 frame cut by it is kept
   (not truncation): mpt_reader_next returns MPT_END meaning "nothing more
   yet", and a later call decodes only what was appended since.  With [on]
   0 (the writer has gone), the next call reads to the end once more and a
   cut at the end is truncation again. */
void mpt_reader_follow(mpt_reader *r, int on);
/* From the END chunk, when present. */
int mpt_reader_end_info(const mpt_reader *r, uint64_t *end_time_ns,
                        uint64_t *total_samples, uint64_t *lost_samples);
void mpt_reader_close(mpt_reader *r);

#ifdef __cplusplus
}
#endif
#endif

/* memprof_trace_codec.c: the one encoder/decoder of the 5.3.0+memprof trace
   format (docs/trace-format.md).

   Design
   - A trace is a byte stream of chunks: an 8-byte chunk header (u32 payload
     length, u8 type, u8 zero, u16 stream) then the payload.  The stream
     starts with the magic "OCMPTRCE" and a HEADER chunk; EVENTS chunks carry
     one stream's (domain slot's) events; an END chunk closes a clean trace.
   - On disk, the stream is either stored as is, or cut into independent LZ4
     frames each holding whole chunks, so a file cut anywhere decodes up to
     its last complete frame (and `lz4 -d` unpacks it).
   - Events are a tag byte and LEB128 varints.  Times, object ids and
     callstacks are deltas against per-stream state held by the encoder and
     mirrored by the decoder: a callstack is sent as "keep the outermost K
     frames of the previous stack, then these new inner frames", so deep,
     slowly-changing stacks cost a few bytes per sample.  Since version 3
     each stream also keeps its 32 most recent short ALLOC records (by a
     hash of their bytes): a sample that would write one of them again
     writes its slot and time, two bytes; dead young samples with
     consecutive ids are one COLLECT run.  Since version 4 new inner
     frames may be packed, 2 bits each against a 3-entry move-to-front
     list the stream keeps (deep recursion through two or three call
     sites), a PROMOTE or COLLECT of the next id is its tag alone, and
     the 32 kept records are 16 sets of two (records of a site that hash
     alike no longer evict each other).
   - Location and string ids are per stream (each domain defines what it
     uses, with no cross-domain synchronisation in the runtime); the decoder
     merges them into one global, content-deduplicated location table.
   - A decoder can follow a file while it is written (mpt_reader_follow):
     an LZ4 frame cut by the current end of the file stays open, its
     decoder context and output so far kept, and goes on with the bytes
     appended later; a cut chunk waits in the decoded buffer.

   Nothing here knows about the OCaml runtime: it is compiled into the
   runtime, the tools and the tests alike. */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "caml/memprof_symbols.h"   /* before lz4frame.h */
#include <lz4frame.h>
#include "caml/memprof_trap.h"

#ifdef CAML_MEMPROF_TRAP
/* The native runtime's sample trap encodes its ALLOC records through the
   header's inline encoders and the functions of this file up to
   mpt_enc_pack_record (see memprof_trap.h): the general registers only. */
#pragma GCC push_options
#pragma GCC target("general-regs-only")
#endif
#include "caml/memprof_trace_codec.h"

/* The runtime's build warns of an unmarked fall-through; this file is also
   built outside the runtime, without its misc.h. */
#if defined(__has_attribute)
#if __has_attribute(fallthrough)
#define MPT_FALLTHROUGH __attribute__((fallthrough))
#endif
#endif
#ifndef MPT_FALLTHROUGH
#define MPT_FALLTHROUGH ((void)0)
#endif

/* Encoded tags (on the wire only; decoders expose mpt_event_kind). */
enum {
  TAG_ALLOC = 0x10,             /* 0x10 + source                      */
  TAG_ALLOC_CUT = 0x18,         /* 0x18 + source: stack cut at the cap */
  TAG_ALLOC_COMPACT = MPT_TAG_ALLOC_COMPACT,  /* version 3, see the header */
  TAG_ALLOC_REPEAT = MPT_TAG_ALLOC_REPEAT,    /* version 3: + slot, 0-31 */
  TAG_PROMOTE = MPT_TAG_PROMOTE,
  TAG_COLLECT = MPT_TAG_COLLECT,
  TAG_COLLECT_RUN = MPT_TAG_COLLECT_RUN,
  TAG_PROMOTE_NEXT = MPT_TAG_PROMOTE_NEXT,    /* version 4 */
  TAG_COLLECT_NEXT = MPT_TAG_COLLECT_NEXT,    /* version 4 */
  TAG_MINOR_GC_NEXT = 0x25,     /* version 4: MINOR_GC, count + 1, `dt` */
  /* Version 5: MINOR_GC of the next count and the fates of the next 1 to
     3 ids (last_gc_id + 1...), 1 << n | fates (bit i: id i promoted),
     then `dt`; tags 0x02 to 0x0f. */
  TAG_MINOR_GC_FATES_MIN = 0x02,
  TAG_MINOR_GC_FATES_MAX = 0x0f,
  TAG_FATES = 0x26,             /* version 5: id delta, 1 << n | fates */
  TAG_STACK_WINDOW = 0x27,      /* version 5: drop, n, n location ids */
  TAG_LOCATION = 0x30,
  TAG_STRING = 0x31,
  TAG_LOCATION_NEXT = 0x32,     /* version 5: no id, the last one's + 1 */
  TAG_STRING_NEXT = 0x33,       /* version 5: no id, the last one's + 1 */
  TAG_MAJOR_CYCLE = 0x40,
  TAG_MAJOR_CYCLE_MARK = 0x41,  /* version 2: a cycle end without statistics */
  TAG_SIMPLE = 0x50             /* 0x50 + mpt_event_kind, with arg    */
};

/* Heap snapshot records (SNAPSHOT chunks only).  A byte below 0x80 is a
   block whose tag is that byte; the others are: */
enum {
  SNAP_BLOCK_BIGTAG = MPT_SNAP_SMALL_TAG, /* block, tag byte follows     */
  SNAP_EDGES = 0x81,
  SNAP_WEAK = 0x82,             /* next block's weak edges start here  */
  SNAP_SAMPLE = 0x83,           /* next block is a sampled allocation  */
  SNAP_ROOT = 0x84,
  SNAP_STRING = 0x85,
  SNAP_CUSTOM = 0x86,
  SNAP_BEGIN = 0x87,
  SNAP_END = 0x88,
  SNAP_WALK = 0x89,             /* where the walk ran, before END      */
  SNAP_IDS = 0x8A,              /* the ids are explicit, after BEGIN   */
  SNAP_SKIP = 0x8B              /* explicit ids: ids without a block   */
};

/* ---------------------------------------------------------------- */
/* Encoder                                                          */

void mpt_enc_init(mpt_encoder *e, uint8_t *buf, size_t len,
                  uint32_t *stack_buf, uint32_t stack_cap)
{
  memset(e, 0, sizeof *e);
  mpt_enc_reset_buffer(e, buf, len);
  e->prev_stack = e->stack_base = stack_buf;
  e->prev_cap = e->stack_room = stack_cap;
  e->pack_min_fresh = MPT_PACK_MIN_FRESH;
}

void mpt_enc_reset_buffer(mpt_encoder *e, uint8_t *buf, size_t len)
{
  e->start = e->pos = buf;
  e->end = buf + len;
}

static inline void put_time(mpt_encoder *e, uint64_t time)
{
  /* Times never go backwards within a stream: clamp rather than wrap. */
  uint64_t dt = time >= e->last_time ? time - e->last_time : 0;
  if (time > e->last_time) e->last_time = time;
  e->pos = mpt_put_uvarint(e->pos, dt);
}

/* A whole stack: its outermost frames shared with the previous stack
   are sent as a count.  [may_pack]: as mpt_enc_alloc_record's. */
static inline __attribute__((always_inline)) void
alloc_whole(mpt_encoder *e, uint64_t time, uint64_t id, uint64_t wosize,
            uint32_t nsamples, enum mpt_source src, int truncated,
            const uint32_t *stack, uint32_t len, const int may_pack)
{
  if (len > e->prev_cap) len = e->prev_cap;
  uint32_t common = mpt_enc_common_frames(e, stack, len);
  mpt_enc_alloc_record(e, time, id, wosize, nsamples, src, truncated,
                       stack, len - common, common, may_pack, 1);
}

void mpt_enc_alloc(mpt_encoder *e, uint64_t time, uint64_t id,
                   uint64_t wosize, uint32_t nsamples, enum mpt_source src,
                   int truncated, const uint32_t *stack, uint32_t len)
{
  alloc_whole(e, time, id, wosize, nsamples, src, truncated, stack, len, 1);
}

void mpt_enc_alloc_unpacked(mpt_encoder *e, uint64_t time, uint64_t id,
                            uint64_t wosize, uint32_t nsamples,
                            enum mpt_source src, int truncated,
                            const uint32_t *stack, uint32_t len)
{
  alloc_whole(e, time, id, wosize, nsamples, src, truncated, stack, len, 0);
}

/* Packed fresh frames (version 4).  Each stream keeps a move-to-front
   list of three location ids, all 0 (no location) at the stream's start,
   which only packed records change.  Frame i's 2-bit code is at bits
   2 (i mod 4) of the codes' byte i / 4: 0-2, the list's entry, moved to
   the front; 3, the next escaped id, pushed at the front (the last entry
   drops out).  The escaped ids follow the ceil(fresh / 4) code bytes, as
   varints. */
/* [id] to the front of the list [m], the entries before [pos] moving one
   down: [pos] is its entry (codes 0-2), or 2 for an escaped id (code 3,
   the last entry drops out).  The one update of the list, for the
   encoder and the decoder alike. */
static inline void mtf_front(uint32_t m[3], uint32_t pos, uint32_t id)
{
  for (; pos > 0; pos--) m[pos] = m[pos - 1];
  m[0] = id;
}

/* Frame [id]'s code against the list [m], which it updates; an escaped
   id goes to [*esc]. */
static inline uint32_t pack_code(uint32_t id, uint32_t m[3], uint8_t **esc)
{
  uint32_t code = id == m[0] ? 0 : id == m[1] ? 1 : id == m[2] ? 2 : 3;
  mtf_front(m, code < 3 ? code : 2, id);
  if (code == 3) *esc = mpt_put_uvarint(*esc, id);
  return code;
}

/* Packed into the free space after the plain record (the caller left
   MPT_MAX_EVENT_BYTES: the plain ids take at most 5 bytes each, the packed
   ones are given up as soon as they take as many bytes as the plain ones,
   give or take one group of four), then moved in place when shorter; the
   stream's list changes only then. */
static uint8_t *pack_frames(mpt_encoder *e, uint8_t *field, uint8_t *frames,
                            uint8_t *end, const uint32_t *fresh_ids,
                            uint32_t fresh)
{
  uint32_t m[3] = { e->mtf[0], e->mtf[1], e->mtf[2] };
  size_t plain = (size_t)(end - frames);
  /* Plain ids with runs (a recursion) may beat the codes alone. */
  if (plain <= (fresh + 3) / 4) return end;
  uint8_t *codes = end, *esc = end + (fresh + 3) / 4, *esc_max = end + plain;
  uint32_t i = 0;
  /* Four frames to a byte, unrolled: constant shifts, one store. */
  for (; i + 4 <= fresh; i += 4) {
    const uint32_t *f = fresh_ids + i;
    uint32_t byte = pack_code(f[0], m, &esc);
    byte |= pack_code(f[1], m, &esc) << 2;
    byte |= pack_code(f[2], m, &esc) << 4;
    byte |= pack_code(f[3], m, &esc) << 6;
    *codes++ = (uint8_t)byte;
    if (esc >= esc_max) return end;
  }
  if (i < fresh) {
    uint32_t byte = 0;
    for (uint32_t k = 0; i < fresh; i++, k += 2)
      byte |= pack_code(fresh_ids[i], m, &esc) << k;
    *codes = (uint8_t)byte;
    if (esc >= esc_max) return end;
  }
  size_t len = (size_t)(esc - end);
  memmove(frames, end, len);
  *field |= 1;
  e->mtf[0] = m[0]; e->mtf[1] = m[1]; e->mtf[2] = m[2];
  return frames + len;
}

uint8_t *mpt_enc_pack_record(mpt_encoder *e, uint8_t *rec, uint8_t *field,
                             uint8_t *frames, uint8_t *end,
                             const uint32_t *fresh_ids, uint32_t fresh)
{
  uint8_t *p = pack_frames(e, field, frames, end, fresh_ids, fresh);
  if (p - rec <= MPT_REPEAT_MAX) {
    uint64_t k;
    unsigned i;
    if (mpt_repeated(e, rec, (size_t)(p - rec), &k, &i)) return rec + 1;
    mpt_repeat_keep(e->repeat, i, k);
  }
  return p;
}
#ifdef CAML_MEMPROF_TRAP
#pragma GCC pop_options
#endif

void mpt_enc_stack_room(mpt_encoder *e, uint32_t *buf, uint32_t room)
{
  if (room < e->prev_cap) return;
  e->prev_stack = e->stack_base = buf;
  e->stack_room = room;
  e->prev_len = 0;
}

/* The previous stack is kept outermost first: the window drops the
   first [drop] entries and puts [n] before the rest, the whole at most
   twice prev_cap (version 9: the ALLOC after it keeps at most prev_cap
   of them) and the room.  Where the room allows, prev_stack moves
   instead of its entries (the ALLOC record after it writes up to
   prev_cap entries from prev_stack); else the result is moved to the
   middle of the room. */
void mpt_enc_stack_window(mpt_encoder *e, uint32_t drop,
                          const uint32_t *outer, uint32_t n)
{
  if (drop > e->prev_len) drop = e->prev_len;
  uint32_t keep = e->prev_len - drop;
  uint32_t most = MPT_WINDOW_FRAMES(e->prev_cap);
  if (most > e->stack_room) most = e->stack_room;
  if (n > most - keep) n = most - keep;
  *e->pos++ = TAG_STACK_WINDOW;
  e->pos = mpt_put_uvarint(e->pos, drop);
  e->pos = mpt_put_uvarint(e->pos, n);
  /* Version 9: with runs, as an ALLOC's fresh ids. */
  e->pos = mpt_put_ids_with_runs(e->pos, outer, n);
  uint32_t *kept = e->prev_stack + drop, *base = e->stack_base;
  size_t off = (size_t)(kept - base);
  uint32_t need = keep + n > e->prev_cap ? keep + n : e->prev_cap;
  if (off < n || off - n + need > e->stack_room) {
    uint32_t *to = base + (e->stack_room - need) / 2 + n;
    memmove(to, kept, keep * sizeof(uint32_t));
    kept = to;
  }
  e->prev_stack = kept - n;
  for (uint32_t i = 0; i < n; i++) e->prev_stack[n - 1 - i] = outer[i];
  e->prev_len = keep + n;
}

void mpt_enc_simple(mpt_encoder *e, enum mpt_event_kind kind,
                    uint64_t time, uint64_t arg)
{
  if (kind == MPT_EV_MINOR_GC) {
    /* version 3: the count of minor collections as a difference; version
       4: the next one (most often: a stream records every minor GC that
       finds one of its samples young) is its tag and time alone */
    uint64_t d = arg - e->last_minor_gc;
    e->last_minor_gc = arg;
    if (d == 1) {
      *e->pos++ = TAG_MINOR_GC_NEXT;
      put_time(e, time);
      return;
    }
    arg = mpt_zigzag((int64_t)d);
  }
  *e->pos++ = (uint8_t)(TAG_SIMPLE + kind);
  put_time(e, time);
  e->pos = mpt_put_uvarint(e->pos, arg);
}

/* The fates in bits cost a byte per 7 where the records one by one cost
   one per PROMOTE or lone COLLECT, and 3 per run of COLLECTs: the minor
   GCs of a program that keeps much of what it samples, at low rates,
   find a few young samples each (long_lived in bench/ at 1e-5: 92 minor
   GCs of 1 to 7, 430 bytes of its 3,250).  So the records are written,
   then replaced by the fates when those are shorter; with the MINOR_GC
   of the next count and up to 3 fates, they are its tag. */
void mpt_enc_minor_gc_fates(mpt_encoder *e, uint64_t time, uint64_t count,
                            uint64_t id, uint64_t fates, uint32_t n)
{
  if (n == 0 || n > MPT_MAX_FATES) return;   /* the contract's */
  fates &= ((uint64_t)1 << n) - 1;
  uint64_t last_gc_id = e->last_gc_id;
  uint8_t *minor = e->pos;
  mpt_enc_simple(e, MPT_EV_MINOR_GC, time, count);
  uint8_t *records = e->pos;
  for (uint32_t i = 0; i < n;) {
    if ((fates >> i) & 1) { mpt_enc_promote(e, id + i); i++; continue; }
    uint32_t k = 1;
    while (i + k < n && !((fates >> (i + k)) & 1)) k++;
    mpt_enc_collect_run(e, id + i, k);
    i += k;
  }
  uint64_t bits = (uint64_t)1 << n | fates;
  if (n <= 3 && *minor == TAG_MINOR_GC_NEXT && id == last_gc_id + 1) {
    *minor = (uint8_t)bits;
    e->pos = records;
    return;
  }
  uint8_t rec[1 + 10 + 10], *p = rec;
  *p++ = TAG_FATES;
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(id - last_gc_id)));
  p = mpt_put_uvarint(p, bits);
  if (p - rec < e->pos - records) {
    memcpy(records, rec, (size_t)(p - rec));
    e->pos = records + (p - rec);
  }
}

void mpt_enc_major_cycle(mpt_encoder *e, uint64_t time, const mpt_heap_stats *s)
{
  *e->pos++ = TAG_MAJOR_CYCLE;
  put_time(e, time);
  /* Differences from the stream's previous MAJOR_CYCLE: a cycle end is
     recorded before the COLLECTs it causes, so a program whose sampled
     blocks die in the major heap records one per cycle; the counters move
     little between two (half a trace's bytes at low rates otherwise). */
  const mpt_heap_stats *l = &e->last_stats;
  uint8_t *p = e->pos;
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->heap_words - l->heap_words)));
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->live_words - l->live_words)));
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->minor_collections - l->minor_collections)));
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->major_collections - l->major_collections)));
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->compactions - l->compactions)));
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(s->promoted_words - l->promoted_words)));
  e->pos = p;
  e->last_stats = *s;
}

void mpt_enc_major_cycle_mark(mpt_encoder *e, uint64_t time,
                              uint64_t major_collections)
{
  *e->pos++ = TAG_MAJOR_CYCLE_MARK;
  put_time(e, time);
  e->pos = mpt_put_uvarint(e->pos, mpt_zigzag((int64_t)(major_collections
                                            - e->last_stats.major_collections)));
  e->last_stats.major_collections = major_collections;
}

void mpt_enc_string(mpt_encoder *e, uint32_t str_id, const char *s, size_t len)
{
  if (len > MPT_MAX_STRING) len = MPT_MAX_STRING;
  if (str_id == e->last_str_id + 1) {
    *e->pos++ = TAG_STRING_NEXT;
  } else {
    *e->pos++ = TAG_STRING;
    e->pos = mpt_put_uvarint(e->pos, str_id);
  }
  e->last_str_id = str_id;
  e->pos = mpt_put_uvarint(e->pos, len);
  memcpy(e->pos, s, len);
  e->pos += len;
}

void mpt_enc_location(mpt_encoder *e, uint32_t loc_id, uint64_t address,
                      const mpt_loc_entry_ids *en, uint32_t n)
{
  if (n > MPT_MAX_INLINED) n = MPT_MAX_INLINED;
  uint8_t *p = e->pos;
  if (loc_id == e->last_loc_id + 1) {
    *p++ = TAG_LOCATION_NEXT;
  } else {
    *p++ = TAG_LOCATION;
    p = mpt_put_uvarint(p, loc_id);
  }
  e->last_loc_id = loc_id;
  /* code addresses of one program are close: 2-3 bytes instead of 6 */
  p = mpt_put_uvarint(p, mpt_zigzag((int64_t)(address - e->last_loc_address)));
  e->last_loc_address = address;
  p = mpt_put_uvarint(p, n);
  for (uint32_t i = 0; i < n; i++) {
    p = mpt_put_uvarint(p, en[i].file);
    p = mpt_put_uvarint(p, en[i].function);
    p = mpt_put_uvarint(p, en[i].line);
    p = mpt_put_uvarint(p, en[i].start_char);
    p = mpt_put_uvarint(p, en[i].end_char);
  }
  e->pos = p;
}

/* ---------------------------------------------------------------- */
/* Heap snapshot encoder                                            */

void mpt_enc_snap_begin(mpt_encoder *e, mpt_snap_encoder *s, uint64_t time,
                        uint64_t seq, uint64_t anchor, uint32_t ndomains)
{
  memset(s, 0, sizeof *s);
  uint8_t *p = e->pos;
  *p++ = SNAP_BEGIN;
  p = mpt_put_uvarint(p, time);
  p = mpt_put_uvarint(p, seq);
  p = mpt_put_uvarint(p, anchor);
  p = mpt_put_uvarint(p, ndomains);
  e->pos = p;
}

void mpt_enc_snap_string(mpt_encoder *e, uint32_t str_id, const char *str,
                         size_t len)
{
  if (len > MPT_MAX_STRING) len = MPT_MAX_STRING;
  *e->pos++ = SNAP_STRING;
  e->pos = mpt_put_uvarint(e->pos, str_id);
  e->pos = mpt_put_uvarint(e->pos, len);
  memcpy(e->pos, str, len);
  e->pos += len;
}

void mpt_enc_snap_root(mpt_encoder *e, mpt_snap_encoder *s,
                       enum mpt_root_kind kind, uint32_t flags,
                       uint32_t label_str_id, uint64_t detail, uint64_t target)
{
  uint8_t *p = e->pos;
  *p++ = SNAP_ROOT;
  *p++ = (uint8_t)kind;
  p = mpt_put_uvarint(p, flags);
  p = mpt_put_uvarint(p, label_str_id);
  p = mpt_put_uvarint(p, detail);
  e->pos = s->next_id
    ? mpt_put_uvarint(p, mpt_zigzag((int64_t)(target - s->next_id)))
    : mpt_snap_put_target(p, &s->assigned, target);
}

void mpt_enc_snap_sample(mpt_encoder *e, mpt_snap_encoder *s, uint64_t alloc_id)
{
  *e->pos++ = SNAP_SAMPLE;
  e->pos = mpt_put_uvarint(e->pos, mpt_zigzag((int64_t)(alloc_id - s->last_sample)));
  s->last_sample = alloc_id;
}

/* [first]: the edge index of targets[0]. */
static inline uint8_t *put_edges(uint8_t *p, mpt_snap_encoder *s,
                                 const uint64_t *targets, uint32_t n,
                                 uint64_t first)
{
  p = mpt_put_uvarint(p, n);
  if (s->next_id)
    for (uint32_t i = 0; i < n; i++)
      p = mpt_snap_put_explicit(p, s, first + i, targets[i]);
  else
    for (uint32_t i = 0; i < n; i++)
      p = mpt_snap_put_target(p, &s->assigned, targets[i]);
  return p;
}

void mpt_enc_snap_block(mpt_encoder *e, mpt_snap_encoder *s, uint32_t tag,
                        uint64_t wosize, const uint64_t *targets, uint32_t n,
                        uint64_t weak_from)
{
  uint8_t *p = e->pos;
  if (weak_from != UINT64_MAX) {
    *p++ = SNAP_WEAK;
    p = mpt_put_uvarint(p, weak_from);
  }
  p = mpt_snap_block_head(p, s, tag, wosize);
  s->block_edges = n;
  e->pos = put_edges(p, s, targets, n, 0);
}

void mpt_enc_snap_edges(mpt_encoder *e, mpt_snap_encoder *s,
                        const uint64_t *targets, uint32_t n)
{
  *e->pos++ = SNAP_EDGES;
  e->pos = put_edges(e->pos, s, targets, n, s->block_edges);
  s->block_edges += n;
}

void mpt_enc_snap_custom(mpt_encoder *e, mpt_snap_encoder *s, uint64_t block,
                         uint32_t ident_str_id, uint64_t ext_bytes)
{
  uint8_t *p = e->pos;
  *p++ = SNAP_CUSTOM;
  p = mpt_put_uvarint(p, s->emitted - block);
  p = mpt_put_uvarint(p, ident_str_id);
  e->pos = mpt_put_uvarint(p, ext_bytes);
}

void mpt_enc_snap_ids(mpt_encoder *e, mpt_snap_encoder *s, uint64_t limit)
{
  *e->pos++ = SNAP_IDS;
  e->pos = mpt_put_uvarint(e->pos, limit);
  s->next_id = 1;
}

void mpt_enc_snap_skip(mpt_encoder *e, mpt_snap_encoder *s, uint64_t n)
{
  *e->pos++ = SNAP_SKIP;
  e->pos = mpt_put_uvarint(e->pos, n);
  s->next_id += n;
}

void mpt_enc_snap_walk(mpt_encoder *e, uint32_t mode, uint64_t walk_ns,
                       uint64_t extra_bytes)
{
  uint8_t *p = e->pos;
  *p++ = SNAP_WALK;
  p = mpt_put_uvarint(p, mode);
  p = mpt_put_uvarint(p, walk_ns);
  e->pos = mpt_put_uvarint(p, extra_bytes);
}

void mpt_enc_snap_end(mpt_encoder *e, mpt_snap_encoder *s, uint64_t time,
                      uint64_t pause_ns, uint64_t nedges, uint32_t flags)
{
  uint8_t *p = e->pos;
  *p++ = SNAP_END;
  p = mpt_put_uvarint(p, time);
  p = mpt_put_uvarint(p, pause_ns);
  p = mpt_put_uvarint(p, s->emitted);
  p = mpt_put_uvarint(p, nedges);
  e->pos = mpt_put_uvarint(p, flags);
}

static inline void put_u16(uint8_t *p, uint16_t v) { p[0] = v; p[1] = v >> 8; }
static inline void put_u32(uint8_t *p, uint32_t v)
{ put_u16(p, (uint16_t)v); put_u16(p + 2, (uint16_t)(v >> 16)); }
static inline void put_u64(uint8_t *p, uint64_t v)
{ put_u32(p, (uint32_t)v); put_u32(p + 4, (uint32_t)(v >> 32)); }

void mpt_chunk_header(uint8_t *hdr, enum mpt_chunk_type type,
                      uint16_t stream, uint32_t body_len)
{
  put_u32(hdr, body_len);
  hdr[4] = (uint8_t)type;
  hdr[5] = 0;
  put_u16(hdr + 6, stream);
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
  size_t n = s ? strlen(s) : 0;
  if (n > MPT_MAX_STRING) n = MPT_MAX_STRING;
  p = mpt_put_uvarint(p, n);
  memcpy(p, s, n);
  return p + n;
}

size_t mpt_write_header_chunk(uint8_t *buf, size_t len,
                              const mpt_trace_info *in)
{
  if (len < MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10))
    return 0;
  memcpy(buf, MPT_MAGIC, MPT_MAGIC_LEN);
  uint8_t *body = buf + MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES, *p = body;
  uint64_t rate_bits;
  memcpy(&rate_bits, &in->sampling_rate, 8);
  /* Most command lines start with the executable's path (argv[0], as a
     program is often run): written once, that is 50 bytes fewer in a
     trace of bench/ (a tenth of a byte per sample at 1e-5). */
  const char *exe = in->executable ? in->executable : "";
  const char *command = in->command_line ? in->command_line : "";
  size_t exe_len = strlen(exe);
  uint32_t flags = in->flags & ~MPT_FLAG_COMMAND_AFTER_EXE;
  if (exe_len > 0 && exe_len <= MPT_MAX_STRING
      && strncmp(command, exe, exe_len) == 0
      && (command[exe_len] == 0 || command[exe_len] == ' ')) {
    flags |= MPT_FLAG_COMMAND_AFTER_EXE;
    command += exe_len;
  }
  put_u16(p, MPT_FORMAT_VERSION); p += 2;
  *p++ = (uint8_t)in->word_size;
  p = mpt_put_uvarint(p, flags);
  put_u64(p, rate_bits); p += 8;
  p = mpt_put_uvarint(p, in->max_frames);
  p = mpt_put_uvarint(p, in->time_unit_ns);
  p = mpt_put_uvarint(p, in->pid);
  p = mpt_put_uvarint(p, in->ppid);
  p = mpt_put_uvarint(p, in->start_wall_ns);
  p = put_str(p, in->executable);
  p = put_str(p, in->hostname);
  p = put_str(p, in->ocaml_version);
  p = put_str(p, command);
  mpt_chunk_header(buf + MPT_MAGIC_LEN, MPT_CHUNK_HEADER, 0, (uint32_t)(p - body));
  return (size_t)(p - buf);
}

size_t mpt_write_end_chunk(uint8_t *buf, size_t len, uint64_t end_time,
                           uint64_t total_samples, uint64_t lost_samples)
{
  if (len < MPT_CHUNK_HEADER_BYTES + 30) return 0;
  uint8_t *body = buf + MPT_CHUNK_HEADER_BYTES, *p = body;
  p = mpt_put_uvarint(p, end_time);
  p = mpt_put_uvarint(p, total_samples);
  p = mpt_put_uvarint(p, lost_samples);
  mpt_chunk_header(buf, MPT_CHUNK_END, 0, (uint32_t)(p - body));
  return (size_t)(p - buf);
}

static const LZ4F_preferences_t frame_prefs = {
  .frameInfo = { .blockSizeID = LZ4F_max4MB, .blockMode = LZ4F_blockIndependent,
                 /* no content checksum: it cost a quarter of the
                    compression's instructions per sample */
                 .contentChecksumFlag = LZ4F_noContentChecksum },
  .compressionLevel = 1,
};

size_t mpt_frame_bound(size_t len) { return LZ4F_compressFrameBound(len, &frame_prefs); }

/* LZ4F_compressFrame clears the 16 KB of its compression state for every
   frame; the same frame through a kept context (the streaming calls, one
   block per frame) resets it lazily instead. */
struct mpt_frame_state { LZ4F_cctx *cctx; };

mpt_frame_state *mpt_frame_state_new(void)
{
  mpt_frame_state *st = malloc(sizeof *st);
  if (st && LZ4F_isError(LZ4F_createCompressionContext(&st->cctx, LZ4F_VERSION))) {
    free(st);
    st = NULL;
  }
  return st;
}

void mpt_frame_state_free(mpt_frame_state *st)
{
  if (!st) return;
  LZ4F_freeCompressionContext(st->cctx);
  free(st);
}

size_t mpt_frame_compress(mpt_frame_state *st, uint8_t *dst, size_t dst_cap,
                          const uint8_t *src, size_t len, int acceleration)
{
  if (dst_cap < mpt_frame_bound(len)) return 0;
  LZ4F_preferences_t p = frame_prefs;
  /* LZ4F's fast mode: a negative level is the acceleration. */
  if (acceleration > 1) p.compressionLevel = -acceleration;
  if (st == NULL) {
    size_t r = LZ4F_compressFrame(dst, dst_cap, src, len, &p);
    return LZ4F_isError(r) ? 0 : r;
  }
  /* The smallest block size that holds the frame, as LZ4F_compressFrame
     chooses (a decoder sizes its buffer by it). */
  p.frameInfo.blockSizeID = len <= (64 << 10) ? LZ4F_max64KB
    : len <= (256 << 10) ? LZ4F_max256KB : len <= (1 << 20) ? LZ4F_max1MB
    : LZ4F_max4MB;
  p.autoFlush = 1;
  size_t h = LZ4F_compressBegin(st->cctx, dst, dst_cap, &p);
  if (LZ4F_isError(h)) return 0;
  size_t b = LZ4F_compressUpdate(st->cctx, dst + h, dst_cap - h, src, len, NULL);
  if (LZ4F_isError(b)) return 0;
  size_t e = LZ4F_compressEnd(st->cctx, dst + h + b, dst_cap - h - b, NULL);
  if (LZ4F_isError(e)) return 0;
  return h + b + e;
}

/* LZ4's frame format: magic, FLG (version 01, independent blocks, no
   checksums, no content size), BD (64 KB blocks), HC (second byte of the
   XXH32 of FLG and BD: a constant here; codec_test checks it against
   LZ4F's), then blocks (u32 size, high bit set when stored), then an
   end mark (u32 0). */
static const uint8_t stored_frame_header[7] = { 0x04, 0x22, 0x4d, 0x18,
                                                0x60, 0x40, 0x82 };

size_t mpt_frame_store(uint8_t *dst, size_t dst_cap,
                       const uint8_t *src, size_t len)
{
  if (len == 0 || len > MPT_STORED_FRAME_MAX
      || dst_cap < MPT_STORED_FRAME_OVERHEAD + len)
    return 0;
  uint8_t *block = dst + sizeof stored_frame_header;
  memcpy(dst, stored_frame_header, sizeof stored_frame_header);
  put_u32(block, (uint32_t)len | 0x80000000u);
  memcpy(block + 4, src, len);
  put_u32(block + 4 + len, 0);
  return MPT_STORED_FRAME_OVERHEAD + len;
}

/* ---------------------------------------------------------------- */
/* Decoder                                                          */

/* The decoder reads the file through one of two byte sources: the raw
   stream, or LZ4 frames decompressed one at a time.  Either way it hands
   whole chunks to the event parser; [chunk] is the current chunk payload. */

typedef struct {               /* per stream: ids are local to a stream */
  uint32_t *loc_map;           /* local location id -> global id (0: undefined) */
  uint32_t nloc;
  char **strings;              /* local string id -> string (NULL: undefined)   */
  uint32_t nstr;
  uint32_t nloc_defined, nstr_defined;  /* for the density rule of ids */
  uint32_t last_loc_id, last_str_id;    /* version 5's next ids */
  uint64_t last_time, last_alloc_id, last_gc_id;
  uint32_t *stack; uint32_t stack_len;  /* previous allocation's global ids */
  uint32_t mtf[3];             /* version 4: packed frames' list         */
  uint64_t last_loc_address;   /* version 2: addresses are differences   */
  mpt_heap_stats last_stats;   /* version 2: MAJOR_CYCLE holds differences */
  uint64_t repeat[32];         /* version 3: the encoder's record slots
                                  (version 4: 16 sets of two)             */
  uint64_t last_minor_gc;      /* version 3: MINOR_GC holds a difference  */
} stream_state;

typedef struct {               /* content-hash set of global locations */
  uint32_t *slots; uint32_t cap;
} loc_index;

struct mpt_reader {
  FILE *file;                  /* NULL when reading memory */
  const uint8_t *mem; size_t mem_len, mem_pos;
  int compressed;
  LZ4F_dctx *dctx;
  uint8_t *plain; size_t plain_len, plain_pos, plain_cap; /* decoded stream */
  /* LZ4 frame being decoded: its output so far sits after plain_len and
     joins the stream only once the frame is complete */
  int frame_open; size_t frame_len; uint64_t frame_in;
  int input_done;              /* the end of the input was met (for now,
                                  when following) */
  int follow;                  /* the file is being written: its end is
                                  not the trace's (mpt_reader_follow) */
  uint64_t in_pos;             /* bytes of input consumed */
  /* current chunk */
  const uint8_t *cp, *cend; uint32_t cstream;
  uint64_t chunk_base_time;
  mpt_trace_info info;
  char *strs[4];
  stream_state *streams; uint32_t nstreams;
  mpt_location *locs; uint32_t nlocs, locs_cap;   /* index 0 unused */
  loc_index index;
  uint32_t *stack_out;
  uint32_t cut_loc;            /* global id of <truncated>, 0 until used */
  uint32_t shown_frames;       /* an event's stack at most (version 6:
                                  the header's max_frames)              */
  /* A COLLECT_RUN, or version 5's fates, being handed out one event at
     a time: [run_left] more from [run_id], in [run_stream] at
     [run_time_ns], a PROMOTE where bit 0 of [run_fates] (shifted after
     each) is set, else a COLLECT.  A run may not be longer than the
     ALLOCs decoded so far minus the COLLECTs (every block is collected
     once, after its ALLOC), so that a corrupt count cannot make a few
     bytes into billions of events; fates are at most MPT_MAX_FATES. */
  uint64_t run_left, run_id, run_time_ns, run_fates; uint32_t run_stream;
  uint64_t allocs_seen, collects_seen;
  int truncated, ended, failed;
  uint64_t end_time, total_samples, lost_samples;
  char error[256];
  int ctype;                   /* current chunk's type */
  struct {                     /* heap snapshot being decoded */
    int open;                  /* between BEGIN and END */
    uint64_t assigned, emitted, last_sample;
    uint64_t id_limit;         /* explicit ids: 1..id_limit; 0: implicit */
    uint64_t next_id, base;    /* explicit ids: next block's, last's */
    uint64_t last_target[MPT_SNAP_EDGE_SLOTS]; /* explicit: by edge index */
    uint64_t pending_sample, pending_weak, block_weak, cur_edges, nedges;
    char **strs; uint32_t nstrs;           /* this snapshot's string ids */
    char **owned; size_t nowned, owned_cap; /* every label, until close  */
    uint64_t *edges;
  } snap;
};

static int fail(mpt_reader *r, const char *msg)
{
  if (!r->failed) {
    r->failed = 1;
    snprintf(r->error, sizeof r->error, "%s", msg);
  }
  return MPT_ERR;
}

/* Read up to [n] more bytes of the file into r->raw at [at]. */
static size_t read_input(mpt_reader *r, uint8_t *at, size_t n)
{
  size_t k;
  if (r->file) {
    k = fread(at, 1, n, r->file);
    /* stdio's end-of-file is sticky: clear it so that a later read sees
       what the writer appends meanwhile. */
    if (k < n && r->follow) clearerr(r->file);
  } else {
    k = r->mem_len - r->mem_pos;
    if (k > n) k = n;
    memcpy(at, r->mem + r->mem_pos, k);
    r->mem_pos += k;
  }
  r->in_pos += k;
  return k;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
  if (need <= *cap) return 1;
  size_t c = *cap ? *cap : 65536;
  while (c < need) c *= 2;
  uint8_t *b = realloc(*buf, c);
  if (!b) return 0;
  *buf = b; *cap = c;
  return 1;
}

/* Decode one LZ4 frame, appending its output to r->plain.  A frame cut
   short by the end of the file is dropped whole (truncation): only
   complete frames count.  When following a file being written, a frame cut
   by the current end of the file stays open (decoder context and output so
   far kept) and the next call goes on with the bytes appended meanwhile.
   Returns 1 (a frame completed), 0 at the end of the input, -1 on error. */
static int decode_frame(mpt_reader *r)
{
  uint8_t in[65536];
  if (!r->frame_open) {
    LZ4F_resetDecompressionContext(r->dctx);
    r->frame_open = 1; r->frame_len = 0; r->frame_in = 0;
  }
  for (;;) {
    size_t k = read_input(r, in, sizeof in);
    if (k == 0) {
      r->input_done = 1;
      if (r->follow) return 0;
      if (r->frame_in) r->truncated = 1;
      r->frame_open = 0; r->frame_len = 0;
      return 0;
    }
    size_t off = 0;
    while (off < k) {
      if (r->frame_len > ((size_t)64 << 20))
        return fail(r, "an LZ4 frame decodes to more than 64 MiB"), -1;
      if (!grow(&r->plain, &r->plain_cap, r->plain_len + r->frame_len + 65536))
        return fail(r, "out of memory"), -1;
      uint8_t *at = r->plain + r->plain_len + r->frame_len;
      size_t dst = r->plain_cap - r->plain_len - r->frame_len, src = k - off;
      size_t hint = LZ4F_decompress(r->dctx, at, &dst, in + off, &src, NULL);
      if (LZ4F_isError(hint)) {
        char m[200];
        snprintf(m, sizeof m, "corrupt LZ4 frame: %s", LZ4F_getErrorName(hint));
        return fail(r, m), -1;
      }
      r->frame_len += dst; off += src; r->frame_in += src;
      if (hint == 0) {              /* frame complete: give back the rest */
        if (off < k) {
          if (r->file) {
            if (fseek(r->file, -(long)(k - off), SEEK_CUR) != 0)
              return fail(r, "cannot seek in trace file"), -1;
          } else r->mem_pos -= k - off;
          r->in_pos -= k - off;
        }
        r->plain_len += r->frame_len;
        r->frame_open = 0; r->frame_len = 0;
        return 1;
      }
    }
  }
}

/* Make at least [need] decoded bytes available at plain_pos.  Returns 1, or
   0 at a clean or truncated end of input (r->truncated tells), or -1. */
static int want(mpt_reader *r, size_t need)
{
  while (r->plain_len - r->plain_pos < need) {
    if (r->input_done) {
      if (r->plain_len > r->plain_pos && !r->follow) r->truncated = 1;
      return 0;
    }
    if (r->plain_pos) {           /* (with an open frame's output) */
      memmove(r->plain, r->plain + r->plain_pos,
              r->plain_len + r->frame_len - r->plain_pos);
      r->plain_len -= r->plain_pos; r->plain_pos = 0;
    }
    if (r->compressed) {
      if (decode_frame(r) < 0) return -1;
      continue;
    }
    if (!grow(&r->plain, &r->plain_cap, r->plain_len + 65536))
      return fail(r, "out of memory"), -1;
    size_t k = read_input(r, r->plain + r->plain_len, r->plain_cap - r->plain_len);
    if (k == 0) r->input_done = 1;
    r->plain_len += k;
  }
  return 1;
}

static inline uint32_t get_u32(const uint8_t *p)
{ return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static inline uint64_t get_u64(const uint8_t *p)
{ return get_u32(p) | (uint64_t)get_u32(p + 4) << 32; }

/* Bounded readers over the current chunk; set r->failed on overrun. */
static uint64_t get_var(mpt_reader *r)
{
  uint64_t v = 0; int shift = 0;
  while (r->cp < r->cend) {
    uint8_t b = *r->cp++;
    if (shift == 63 && b > 1) break;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
    shift += 7;
    if (shift > 63) break;
  }
  fail(r, "malformed varint or event cut short inside a chunk");
  r->cp = r->cend;
  return 0;
}

static char *get_str(mpt_reader *r)
{
  uint64_t n = get_var(r);
  if (r->failed) return NULL;
  if (n > MPT_MAX_STRING || n > (uint64_t)(r->cend - r->cp)) {
    fail(r, "string length out of bounds");
    return NULL;
  }
  char *s = malloc(n + 1);
  if (!s) { fail(r, "out of memory"); return NULL; }
  memcpy(s, r->cp, n); s[n] = 0;
  r->cp += n;
  return s;
}

/* Next chunk into cp/cend: 1, 0 at end, -1 on error. */
static int next_chunk(mpt_reader *r, int *type)
{
  int w = want(r, MPT_CHUNK_HEADER_BYTES);
  if (w <= 0) return w;
  const uint8_t *h = r->plain + r->plain_pos;
  uint32_t len = get_u32(h);
  *type = h[4];
  r->cstream = h[6] | (uint32_t)h[7] << 8;
  if (len > MPT_MAX_CHUNK_PAYLOAD) return fail(r, "chunk longer than the format allows");
  if (*type < MPT_CHUNK_HEADER || *type > MPT_CHUNK_SNAPSHOT || h[5] != 0)
    return fail(r, "unknown chunk type");
  w = want(r, MPT_CHUNK_HEADER_BYTES + (size_t)len);
  if (w <= 0) return w;
  r->cp = r->plain + r->plain_pos + MPT_CHUNK_HEADER_BYTES;
  r->cend = r->cp + len;
  r->ctype = *type;
  r->plain_pos += MPT_CHUNK_HEADER_BYTES + len;
  return 1;
}

static int read_header(mpt_reader *r)
{
  int w = want(r, MPT_MAGIC_LEN);
  if (w < 0) return MPT_ERR;
  /* A file cut inside its header is not a foreign file: say which. */
  size_t have = r->plain_len - r->plain_pos;
  if (have && memcmp(r->plain + r->plain_pos, MPT_MAGIC, have < MPT_MAGIC_LEN ? have : MPT_MAGIC_LEN))
    return fail(r, "not a 5.3.0+memprof trace (bad magic)");
  if (w == 0) return fail(r, "truncated header: the file ends inside the trace header");
  r->plain_pos += MPT_MAGIC_LEN;
  int type;
  w = next_chunk(r, &type);
  if (w < 0) return MPT_ERR;
  if (w == 0) return fail(r, "truncated header: the file ends inside the trace header");
  if (type != MPT_CHUNK_HEADER) return fail(r, "trace header missing (first chunk is not a header)");
  if (r->cend - r->cp < 11) return fail(r, "trace header too short");
  mpt_trace_info *in = &r->info;
  in->format_version = r->cp[0] | r->cp[1] << 8;
  if (in->format_version < 1 || in->format_version > MPT_FORMAT_VERSION) {
    snprintf(r->error, sizeof r->error,
             "unsupported trace format version %u (this reader knows 1 to %d)",
             in->format_version, MPT_FORMAT_VERSION);
    r->failed = 1;
    return MPT_ERR;
  }
  in->word_size = r->cp[2];
  r->cp += 3;
  in->flags = (uint32_t)get_var(r);
  if (r->cend - r->cp < 8) return fail(r, "trace header too short");
  uint64_t bits = get_u64(r->cp); r->cp += 8;
  memcpy(&in->sampling_rate, &bits, 8);
  in->max_frames = (uint32_t)get_var(r);
  /* Writers before version 6 cut stacks at the cap themselves. */
  r->shown_frames = in->format_version >= 6 && in->max_frames >= 1
                    && in->max_frames < MPT_MAX_FRAMES ? in->max_frames
                                                       : MPT_MAX_FRAMES;
  in->time_unit_ns = (uint32_t)get_var(r);
  in->pid = get_var(r);
  in->ppid = get_var(r);
  in->start_wall_ns = get_var(r);
  for (int i = 0; i < 4; i++) r->strs[i] = get_str(r);
  if (r->failed) return MPT_ERR;
  if (in->format_version >= 5 && (in->flags & MPT_FLAG_COMMAND_AFTER_EXE)) {
    size_t a = strlen(r->strs[0]), b = strlen(r->strs[3]);
    char *command = malloc(a + b + 1);
    if (!command) return fail(r, "out of memory");
    memcpy(command, r->strs[0], a);
    memcpy(command + a, r->strs[3], b + 1);
    free(r->strs[3]);
    r->strs[3] = command;
    in->flags &= ~MPT_FLAG_COMMAND_AFTER_EXE;
  }
  /* 0: a trace of heap snapshots only (memprof_rate=0) */
  if (!(in->sampling_rate >= 0 && in->sampling_rate <= 1))
    return fail(r, "sampling rate in header is not in [0, 1]");
  if (in->time_unit_ns == 0 || in->time_unit_ns > 1000000000)
    return fail(r, "time unit in header out of range");
  in->executable = r->strs[0]; in->hostname = r->strs[1];
  in->ocaml_version = r->strs[2]; in->command_line = r->strs[3];
  if (r->compressed) in->flags |= MPT_FLAG_COMPRESSED;
  return MPT_OK;
}

static mpt_reader *open_common(mpt_reader *r, char *err, size_t errlen)
{
  uint8_t magic[4];
  size_t k = read_input(r, magic, 4);
  static const uint8_t lz4_magic[4] = { 0x04, 0x22, 0x4d, 0x18 };
  r->compressed = (k == 4 && memcmp(magic, lz4_magic, 4) == 0);
  if (r->compressed) {
    if (LZ4F_isError(LZ4F_createDecompressionContext(&r->dctx, LZ4F_VERSION))) {
      snprintf(err, errlen, "cannot create LZ4 context");
      mpt_reader_close(r); return NULL;
    }
  }
  /* Give the four bytes back to the byte source. */
  if (r->file) { if (fseek(r->file, 0, SEEK_SET) != 0) k = 0; }
  else r->mem_pos = 0;
  r->in_pos = 0;
  if (k < 4) {
    snprintf(err, errlen, "not a 5.3.0+memprof trace (file shorter than 4 bytes)");
    mpt_reader_close(r); return NULL;
  }
  if (read_header(r) != MPT_OK) {
    snprintf(err, errlen, "%s", r->error);
    mpt_reader_close(r); return NULL;
  }
  r->locs_cap = 1024;
  r->locs = calloc(r->locs_cap, sizeof *r->locs);
  r->nlocs = 1;
  /* One more than a stack's frames: the <truncated> mark. */
  r->stack_out = malloc((MPT_MAX_FRAMES + 1) * sizeof(uint32_t));
  if (!r->locs || !r->stack_out) {
    snprintf(err, errlen, "out of memory");
    mpt_reader_close(r); return NULL;
  }
  return r;
}

mpt_reader *mpt_reader_open(const char *path, char *err, size_t errlen)
{
  mpt_reader *r = calloc(1, sizeof *r);
  if (!r) { snprintf(err, errlen, "out of memory"); return NULL; }
  r->file = fopen(path, "rb");
  if (!r->file) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    free(r); return NULL;
  }
  return open_common(r, err, errlen);
}

mpt_reader *mpt_reader_open_mem(const uint8_t *data, size_t len,
                                char *err, size_t errlen)
{
  mpt_reader *r = calloc(1, sizeof *r);
  if (!r) { snprintf(err, errlen, "out of memory"); return NULL; }
  r->mem = data; r->mem_len = len;
  return open_common(r, err, errlen);
}

const mpt_trace_info *mpt_reader_info(const mpt_reader *r) { return &r->info; }
const char *mpt_reader_error(const mpt_reader *r) { return r->error; }
int mpt_reader_truncated(const mpt_reader *r) { return r->truncated || !r->ended; }
uint64_t mpt_reader_bytes_read(const mpt_reader *r) { return r->in_pos; }

void mpt_reader_follow(mpt_reader *r, int on)
{
  r->follow = on;
  r->input_done = 0;
}
uint32_t mpt_reader_location_count(const mpt_reader *r) { return r->nlocs - 1; }

const mpt_location *mpt_reader_location(const mpt_reader *r, uint32_t id)
{
  return (id >= 1 && id < r->nlocs) ? &r->locs[id] : NULL;
}

int mpt_reader_end_info(const mpt_reader *r, uint64_t *end_time_ns,
                        uint64_t *total_samples, uint64_t *lost_samples)
{
  if (!r->ended) return 0;
  if (end_time_ns) *end_time_ns = r->end_time;
  if (total_samples) *total_samples = r->total_samples;
  if (lost_samples) *lost_samples = r->lost_samples;
  return 1;
}

static stream_state *stream(mpt_reader *r, uint32_t s)
{
  if (s >= r->nstreams) {
    uint32_t n = s + 1;
    stream_state *st = realloc(r->streams, n * sizeof *st);
    if (!st) return NULL;
    memset(st + r->nstreams, 0, (n - r->nstreams) * sizeof *st);
    r->streams = st; r->nstreams = n;
  }
  stream_state *st = &r->streams[s];
  if (!st->stack && !(st->stack = malloc(MPT_MAX_WINDOW * sizeof(uint32_t))))
    return NULL;
  return st;
}

static uint64_t loc_hash(const mpt_location *l)
{
  uint64_t h = 1469598103934665603ull ^ l->n;
  for (uint32_t i = 0; i < l->n; i++) {
    const mpt_loc_entry *e = &l->entries[i];
    for (const char *s = e->file; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    for (const char *s = e->function; *s; s++) h = (h ^ (uint8_t)*s) * 1099511628211ull;
    h = (h ^ e->line) * 1099511628211ull;
    h = (h ^ ((uint64_t)e->start_char << 20 | e->end_char)) * 1099511628211ull;
  }
  return h;
}

static int loc_equal(const mpt_location *a, const mpt_location *b)
{
  if (a->n != b->n) return 0;
  for (uint32_t i = 0; i < a->n; i++) {
    const mpt_loc_entry *x = &a->entries[i], *y = &b->entries[i];
    if (x->line != y->line || x->start_char != y->start_char
        || x->end_char != y->end_char || strcmp(x->file, y->file)
        || strcmp(x->function, y->function)) return 0;
  }
  return 1;
}

/* Intern [l] (entries malloc'd, owned) into the global table. */
static uint32_t intern_location(mpt_reader *r, mpt_location *l)
{
  if (2 * (r->nlocs + 1) > r->index.cap) {
    uint32_t cap = r->index.cap ? 2 * r->index.cap : 4096;
    uint32_t *slots = calloc(cap, sizeof *slots);
    if (!slots) return 0;
    for (uint32_t id = 1; id < r->nlocs; id++) {
      uint32_t h = (uint32_t)loc_hash(&r->locs[id]) & (cap - 1);
      while (slots[h]) h = (h + 1) & (cap - 1);
      slots[h] = id;
    }
    free(r->index.slots);
    r->index.slots = slots; r->index.cap = cap;
  }
  uint32_t h = (uint32_t)loc_hash(l) & (r->index.cap - 1);
  while (r->index.slots[h]) {
    uint32_t id = r->index.slots[h];
    if (loc_equal(&r->locs[id], l)) { free((void *)l->entries); return id; }
    h = (h + 1) & (r->index.cap - 1);
  }
  if (r->nlocs == r->locs_cap) {
    mpt_location *nl = realloc(r->locs, 2 * r->locs_cap * sizeof *nl);
    if (!nl) return 0;
    r->locs = nl; r->locs_cap *= 2;
  }
  r->locs[r->nlocs] = *l;
  r->index.slots[h] = r->nlocs;
  return r->nlocs++;
}

/* The location every cut stack ends with. */
static uint32_t cut_location(mpt_reader *r)
{
  mpt_loc_entry *en = calloc(1, sizeof *en);
  if (!en) return 0;
  en->file = "";
  en->function = MPT_TRUNCATED_FRAME;
  mpt_location l = { 0, 1, en };
  uint32_t g = intern_location(r, &l);
  if (!g) free(en);
  return g;
}

/* A STRING or LOCATION definition's id: its field, or with [next]
   (version 5's tags) the stream's last one's + 1. */
static uint64_t definition_id(mpt_reader *r, uint32_t *last, int next)
{
  uint64_t id = next ? (uint64_t)*last + 1 : get_var(r);
  if (id <= 16u << 20) *last = (uint32_t)id;   /* else refused below */
  return id;
}

static int define_string(mpt_reader *r, stream_state *st, int next)
{
  uint64_t id = definition_id(r, &st->last_str_id, next);
  char *s = get_str(r);
  if (r->failed) return MPT_ERR;
  if (id == 0 || id > 16u << 20 || id > (uint64_t)st->nstr_defined + MPT_ID_SLACK) {
    free(s); return fail(r, "string id out of range");
  }
  st->nstr_defined++;
  if (id >= st->nstr) {
    uint32_t n = (uint32_t)id * 2;
    char **a = realloc(st->strings, n * sizeof *a);
    if (!a) { free(s); return fail(r, "out of memory"); }
    memset(a + st->nstr, 0, (n - st->nstr) * sizeof *a);
    st->strings = a; st->nstr = n;
  }
  if (st->strings[id]) { free(s); return fail(r, "string id defined twice"); }
  st->strings[id] = s;
  return MPT_OK;
}

static const char *stream_string(mpt_reader *r, stream_state *st, uint64_t id)
{
  if (id == 0) return "";
  if (id >= st->nstr || !st->strings[id]) {
    fail(r, "location refers to an undefined string");
    return "";
  }
  return st->strings[id];
}

static int define_location(mpt_reader *r, stream_state *st, int next)
{
  uint64_t id = definition_id(r, &st->last_loc_id, next);
  mpt_location l;
  l.address = get_var(r);
  if (r->info.format_version >= 2)
    l.address = st->last_loc_address += (uint64_t)mpt_unzigzag(l.address);
  uint64_t n = get_var(r);
  if (r->failed) return MPT_ERR;
  if (id == 0 || id > 16u << 20 || id > (uint64_t)st->nloc_defined + MPT_ID_SLACK)
    return fail(r, "location id out of range");
  if (n > MPT_MAX_INLINED) return fail(r, "location has too many inlined entries");
  mpt_loc_entry *en = calloc(n ? n : 1, sizeof *en);
  if (!en) return fail(r, "out of memory");
  for (uint64_t i = 0; i < n; i++) {
    /* Strings are shared with the stream's table, which lives as long as
       the reader: the location keeps pointers into it. */
    en[i].file = stream_string(r, st, get_var(r));
    en[i].function = stream_string(r, st, get_var(r));
    en[i].line = (uint32_t)get_var(r);
    en[i].start_char = (uint32_t)get_var(r);
    en[i].end_char = (uint32_t)get_var(r);
  }
  if (r->failed) { free(en); return MPT_ERR; }
  l.n = (uint32_t)n; l.entries = en;
  uint32_t g = intern_location(r, &l);
  if (!g) { free(en); return fail(r, "out of memory"); }
  if (id >= st->nloc) {
    uint32_t cap = (uint32_t)id * 2;
    uint32_t *m = realloc(st->loc_map, cap * sizeof *m);
    if (!m) return fail(r, "out of memory");
    memset(m + st->nloc, 0, (cap - st->nloc) * sizeof *m);
    st->loc_map = m; st->nloc = cap;
  }
  if (st->loc_map[id]) return fail(r, "location id defined twice");
  st->loc_map[id] = g;
  st->nloc_defined++;
  return MPT_OK;
}

static void get_time(mpt_reader *r, stream_state *st, mpt_event *ev)
{
  st->last_time += get_var(r);
  ev->time_ns = st->last_time * r->info.time_unit_ns;
}

/* ---------------------------------------------------------------- */
/* Heap snapshot decoder                                            */

enum { SNAP_NEXT = 2 };        /* record consumed, no event for it */

/* A varint of a snapshot record: most are one byte (an edge to the next
   fresh block, a small size), read inline. */
static inline uint64_t snap_var(mpt_reader *r)
{
  if (r->cp < r->cend && *r->cp < 0x80) return *r->cp++;
  return get_var(r);
}

/* A target with explicit ids: relative to [*base] (then the target), at
   most id_limit. */
static int snap_explicit_target(mpt_reader *r, uint64_t *base, uint64_t *out)
{
  uint64_t t = *base + (uint64_t)mpt_unzigzag(snap_var(r));
  if (r->failed) return MPT_ERR;
  if (t == 0 || t > r->snap.id_limit)
    return fail(r, "snapshot edge or root names a block id out of range");
  *out = *base = t;
  return MPT_OK;
}

/* A target of edge index [i] of the current block. */
static int snap_target(mpt_reader *r, uint64_t i, uint64_t *out)
{
  if (r->snap.id_limit)
    return snap_explicit_target(
      r, &r->snap.last_target[i < MPT_SNAP_EDGE_SLOTS ? i : MPT_SNAP_EDGE_SLOTS - 1], out);
  int64_t d = mpt_unzigzag(snap_var(r));
  uint64_t next = r->snap.assigned + 1;
  /* Negated in unsigned arithmetic: d may be INT64_MIN in a corrupt file. */
  uint64_t back = d < 0 ? 0 - (uint64_t)d : 0;
  if (r->failed) return MPT_ERR;
  if (d > 0 || back >= next)
    return fail(r, "snapshot edge or root names a block id out of range");
  *out = next - back;
  if (*out == next) r->snap.assigned = next;
  return MPT_OK;
}

static int snap_edges(mpt_reader *r, mpt_event *ev)
{
  uint64_t n = snap_var(r);
  if (r->failed) return MPT_ERR;
  if (n > MPT_SNAP_MAX_EDGES) return fail(r, "snapshot record with too many edges");
  if (!r->snap.edges
      && !(r->snap.edges = malloc(MPT_SNAP_MAX_EDGES * sizeof(uint64_t))))
    return fail(r, "out of memory");
  for (uint64_t i = 0; i < n; i++)
    if (snap_target(r, r->snap.cur_edges + i, &r->snap.edges[i]) != MPT_OK) return MPT_ERR;
  ev->snap.edges = r->snap.edges;
  ev->snap.nedges = (uint32_t)n;
  ev->snap.edge_base = r->snap.cur_edges;
  ev->snap.weak_from = r->snap.block_weak;
  r->snap.cur_edges += n;
  r->snap.nedges += n;
  return MPT_OK;
}

static int snap_string(mpt_reader *r)
{
  uint64_t id = get_var(r);
  char *str = get_str(r);
  if (r->failed) return MPT_ERR;
  if (id == 0 || id > 16u << 20 || id > (uint64_t)r->snap.nowned + MPT_ID_SLACK) {
    free(str); return fail(r, "snapshot string id out of range");
  }
  if (r->snap.nowned == r->snap.owned_cap) {
    size_t cap = r->snap.owned_cap ? 2 * r->snap.owned_cap : 256;
    char **o = realloc(r->snap.owned, cap * sizeof *o);
    if (!o) { free(str); return fail(r, "out of memory"); }
    r->snap.owned = o; r->snap.owned_cap = cap;
  }
  r->snap.owned[r->snap.nowned++] = str;
  if (id >= r->snap.nstrs) {
    uint32_t n = (uint32_t)id * 2;
    char **a = realloc(r->snap.strs, n * sizeof *a);
    if (!a) return fail(r, "out of memory");
    memset(a + r->snap.nstrs, 0, (n - r->snap.nstrs) * sizeof *a);
    r->snap.strs = a; r->snap.nstrs = n;
  }
  if (r->snap.strs[id]) return fail(r, "snapshot string id defined twice");
  r->snap.strs[id] = str;
  return MPT_OK;
}

static const char *snap_label(mpt_reader *r, uint64_t id)
{
  if (id == 0) return "";
  if (id >= r->snap.nstrs || !r->snap.strs[id]) {
    fail(r, "snapshot record refers to an undefined string");
    return "";
  }
  return r->snap.strs[id];
}

/* One record of a SNAPSHOT chunk: MPT_OK with an event, SNAP_NEXT, or
   MPT_ERR. */
static int snap_record(mpt_reader *r, mpt_event *ev)
{
  uint8_t tag = *r->cp++;
  if (tag != SNAP_BEGIN && !r->snap.open)
    return fail(r, "snapshot record outside a snapshot");
  if (tag < SNAP_BLOCK_BIGTAG || tag == SNAP_BLOCK_BIGTAG) {
    ev->kind = MPT_EV_SNAP_BLOCK;
    if (tag == SNAP_BLOCK_BIGTAG) {
      if (r->cp >= r->cend) return fail(r, "snapshot block cut short");
      tag = *r->cp++;
    }
    ev->snap.tag = tag;
    ev->wosize = snap_var(r);
    ++r->snap.emitted;
    if (r->snap.id_limit) {
      if (r->snap.next_id > r->snap.id_limit)
        return fail(r, "snapshot block past its id limit");
      r->snap.base = r->snap.next_id++;
      ev->snap.block = r->snap.base;
    } else {
      if (r->snap.emitted > r->snap.assigned)
        return fail(r, "snapshot block written before any root or edge names it");
      ev->snap.block = r->snap.emitted;
    }
    ev->snap.sample_id = r->snap.pending_sample;
    r->snap.pending_sample = 0;
    r->snap.cur_edges = 0;
    /* The block's first weak edge holds for its EDGES records too (an
       ephemeron or Weak array of more than MPT_SNAP_MAX_EDGES fields). */
    r->snap.block_weak = r->snap.pending_weak;
    r->snap.pending_weak = UINT64_MAX;
    return snap_edges(r, ev);
  }
  switch (tag) {
  case SNAP_EDGES:
    if (r->snap.emitted == 0) return fail(r, "snapshot edges before any block");
    ev->kind = MPT_EV_SNAP_EDGES;
    ev->snap.block = r->snap.id_limit ? r->snap.base : r->snap.emitted;
    return snap_edges(r, ev);
  case SNAP_WEAK:
    r->snap.pending_weak = get_var(r);
    return r->failed ? MPT_ERR : SNAP_NEXT;
  case SNAP_SAMPLE:
    r->snap.last_sample += (uint64_t)mpt_unzigzag(get_var(r));
    r->snap.pending_sample = r->snap.last_sample;
    return r->failed ? MPT_ERR : SNAP_NEXT;
  case SNAP_STRING:
    return snap_string(r) == MPT_OK ? SNAP_NEXT : MPT_ERR;
  case SNAP_ROOT:
    if (r->cp >= r->cend) return fail(r, "snapshot root cut short");
    ev->kind = MPT_EV_SNAP_ROOT;
    ev->snap.root_kind = *r->cp++;
    if (ev->snap.root_kind >= MPT_ROOT_KIND_COUNT) return fail(r, "unknown snapshot root kind");
    ev->snap.flags = (uint32_t)get_var(r);
    ev->snap.label = snap_label(r, get_var(r));
    ev->snap.detail = get_var(r);
    if (r->snap.id_limit) {
      uint64_t base = r->snap.next_id;
      if (snap_explicit_target(r, &base, &ev->snap.target) != MPT_OK) return MPT_ERR;
    } else if (snap_target(r, 0, &ev->snap.target) != MPT_OK) {
      return MPT_ERR;
    }
    return r->failed ? MPT_ERR : MPT_OK;
  case SNAP_CUSTOM: {
    uint64_t back = get_var(r);
    if (!r->failed && back >= r->snap.emitted)
      return fail(r, "snapshot custom record names an unwritten block");
    if (!r->failed && r->snap.id_limit && back != 0)
      return fail(r, "snapshot custom record not after its block");
    ev->kind = MPT_EV_SNAP_CUSTOM;
    ev->snap.block = r->snap.id_limit ? r->snap.base : r->snap.emitted - back;
    ev->snap.label = snap_label(r, get_var(r));
    ev->snap.ext_bytes = get_var(r);
    return r->failed ? MPT_ERR : MPT_OK;
  }
  case SNAP_BEGIN:
    ev->kind = MPT_EV_SNAP_BEGIN;
    ev->time_ns = get_var(r) * r->info.time_unit_ns;
    ev->snap.seq = get_var(r);
    ev->snap.anchor = get_var(r);
    ev->arg = get_var(r);
    if (r->snap.strs) memset(r->snap.strs, 0, r->snap.nstrs * sizeof *r->snap.strs);
    r->snap.open = 1;
    r->snap.assigned = r->snap.emitted = r->snap.last_sample = 0;
    r->snap.id_limit = r->snap.next_id = r->snap.base = 0;
    memset(r->snap.last_target, 0, sizeof r->snap.last_target);
    r->snap.pending_sample = r->snap.cur_edges = r->snap.nedges = 0;
    r->snap.pending_weak = r->snap.block_weak = UINT64_MAX;
    return r->failed ? MPT_ERR : MPT_OK;
  case SNAP_END:
    ev->kind = MPT_EV_SNAP_END;
    ev->time_ns = get_var(r) * r->info.time_unit_ns;
    ev->snap.pause_ns = get_var(r);
    ev->snap.total_blocks = get_var(r);
    ev->snap.total_edges = get_var(r);
    ev->snap.flags = (uint32_t)get_var(r);
    if (r->failed) return MPT_ERR;
    if (ev->snap.total_blocks != r->snap.emitted || ev->snap.total_edges != r->snap.nedges)
      return fail(r, "snapshot end does not match its blocks and edges");
    r->snap.open = 0;
    return MPT_OK;
  case SNAP_IDS:
    if (r->info.format_version < 7)
      return fail(r, "snapshot ids record in a trace of format version 6 or older");
    ev->kind = MPT_EV_SNAP_IDS;
    ev->snap.id_limit = get_var(r);
    if (r->failed) return MPT_ERR;
    if (r->snap.id_limit || r->snap.assigned || r->snap.emitted)
      return fail(r, "snapshot ids record after a root or block");
    if (ev->snap.id_limit == 0 || ev->snap.id_limit > UINT32_MAX)
      return fail(r, "snapshot id limit out of range");
    r->snap.id_limit = ev->snap.id_limit;
    r->snap.next_id = 1;
    return MPT_OK;
  case SNAP_SKIP: {
    uint64_t n = get_var(r);
    if (r->failed) return MPT_ERR;
    if (!r->snap.id_limit) return fail(r, "snapshot skip record with implicit ids");
    if (n == 0 || n > r->snap.id_limit + 1 - r->snap.next_id)
      return fail(r, "snapshot skip record past the id limit");
    r->snap.next_id += n;
    return SNAP_NEXT;
  }
  case SNAP_WALK:
    ev->kind = MPT_EV_SNAP_WALK;
    ev->snap.walk_mode = (uint32_t)get_var(r);
    ev->snap.walk_ns = get_var(r);
    ev->snap.extra_bytes = get_var(r);
    if (r->failed) return MPT_ERR;
    if (ev->snap.walk_mode >= MPT_WALK_MODE_COUNT)
      return fail(r, "snapshot walk record with an unknown mode");
    return MPT_OK;
  default: {
    char m[64];
    snprintf(m, sizeof m, "unknown snapshot record 0x%02x", tag);
    return fail(r, m);
  }
  }
}

/* [n] location ids written plain (an ALLOC's fresh ids that are not
   packed, a STACK_WINDOW's), mapped into [out]; with [runs], MPT_RUN and
   a count stand for that many more of the id before (versions 8 and 9,
   mpt_put_ids_with_runs).  [window] names the record in errors. */
static int get_plain_ids(mpt_reader *r, stream_state *st, uint32_t *out,
                         uint64_t n, int runs, int window)
{
  for (uint64_t i = 0; i < n; i++) {
    uint64_t local = get_var(r);
    if (r->failed) return MPT_ERR;
    if (local == MPT_RUN && runs && i > 0) {
      uint64_t more = get_var(r);
      if (r->failed) return MPT_ERR;
      if (more == 0 || more > n - i)
        return fail(r, window ? "stack window run of a bad length"
                              : "callstack run of a bad length");
      for (uint32_t id = out[i - 1]; more > 0; more--) out[i++] = id;
      i--;
      continue;
    }
    if (local == 0 || local >= st->nloc || !st->loc_map[local])
      return fail(r, window ? "stack window uses an undefined location"
                            : "callstack uses an undefined location");
    out[i] = st->loc_map[local];
  }
  return MPT_OK;
}

/* The fields of an ALLOC record of [tag] (its time apart: before them in
   version 1 and 2 records, after them in version 3's) and its stack. */
static int alloc_fields(mpt_reader *r, stream_state *st, mpt_event *ev,
                        uint8_t tag)
{
  uint64_t ns, common, fresh;
  int packed = 0;
  ev->kind = MPT_EV_ALLOC;
  if (tag >= TAG_ALLOC_COMPACT) {
    ev->truncated = (tag & 8) != 0;
    ev->source = (enum mpt_source)(tag & 3);
    if (tag & 4) {
      st->last_alloc_id++;
      ns = 1;
    } else {
      st->last_alloc_id += (uint64_t)mpt_unzigzag(get_var(r));
      ns = get_var(r);
    }
    ev->id = st->last_alloc_id;
    ev->wosize = get_var(r);
    common = get_var(r);
    if (r->info.format_version >= 4) {
      packed = common & 1;
      common >>= 1;
    }
    fresh = (tag >> 4 & 7) < 7 ? (tag >> 4 & 7) : get_var(r);
  } else {
    ev->truncated = tag >= TAG_ALLOC_CUT;
    ev->source = (enum mpt_source)(tag - (ev->truncated ? TAG_ALLOC_CUT : TAG_ALLOC));
    st->last_alloc_id += (uint64_t)mpt_unzigzag(get_var(r));
    ev->id = st->last_alloc_id;
    ev->wosize = get_var(r);
    ns = get_var(r); common = get_var(r); fresh = get_var(r);
  }
  if (r->failed) return MPT_ERR;
  if (ns == 0 || ns > UINT32_MAX) return fail(r, "allocation with a bad sample count");
  if (common > st->stack_len || fresh > MPT_MAX_FRAMES - common)
    return fail(r, "callstack refers beyond the previous stack or is too deep");
  ev->nsamples = (uint32_t)ns;
  uint32_t len = (uint32_t)(common + fresh);
  const uint8_t *codes = NULL;
  uint32_t *mtf = st->mtf;     /* stream-local ids, as the writer's list */
  if (packed) {
    if ((size_t)(r->cend - r->cp) < (fresh + 3) / 4)
      return fail(r, "packed callstack cut short");
    codes = r->cp;
    r->cp += (fresh + 3) / 4;
  }
  if (!codes) {
    if (get_plain_ids(r, st, r->stack_out, fresh,
                      r->info.format_version >= 8, 0) != MPT_OK)
      return MPT_ERR;
  }
  for (uint64_t i = 0; codes && i < fresh; i++) {
    uint32_t code = codes[i / 4] >> (2 * (i % 4)) & 3, id;
    if (code == 3) {
      uint64_t v = get_var(r);
      id = v > UINT32_MAX ? 0 : (uint32_t)v;
    } else {
      id = mtf[code];
    }
    mtf_front(mtf, code < 3 ? code : 2, id);
    if (id == 0 || id >= st->nloc || !st->loc_map[id])
      return fail(r, "callstack uses an undefined location");
    r->stack_out[i] = st->loc_map[id];
  }
  if (r->failed) return MPT_ERR;
  memcpy(r->stack_out + fresh, st->stack + (st->stack_len - common),
         common * sizeof(uint32_t));
  memcpy(st->stack, r->stack_out, len * sizeof(uint32_t));
  st->stack_len = len;
  /* Version 6: the stream's stack may be deeper than the header's cap,
     and the event's is its innermost max_frames, cut. */
  if (len > r->shown_frames) {
    len = r->shown_frames;
    ev->truncated = 1;
  }
  /* A cut stack ends in a <truncated> frame, for every tool to show
     (not part of the stream's previous stack). */
  if (ev->truncated) {
    if (!r->cut_loc && !(r->cut_loc = cut_location(r)))
      return fail(r, "out of memory");
    r->stack_out[len++] = r->cut_loc;
  }
  ev->stack = r->stack_out; ev->stack_len = len;
  r->allocs_seen++;
  return MPT_OK;
}

/* Version 5's fates of the blocks [id, id + n) of stream [st], where
   [bits] is 1 << n | fates: handed out by mpt_reader_next. */
static int start_fates(mpt_reader *r, stream_state *st, uint32_t stream,
                       uint64_t time_ns, uint64_t id, uint64_t bits)
{
  int n = 63 - __builtin_clzll(bits);
  uint64_t fates = bits & ~((uint64_t)1 << n);
  uint64_t collects = (uint64_t)(n - __builtin_popcountll(fates));
  uint64_t open = r->allocs_seen > r->collects_seen
    ? r->allocs_seen - r->collects_seen : 0;
  if (collects > open)    /* as for COLLECT_RUN */
    return fail(r, "fates collect more blocks than the allocations not yet collected");
  r->collects_seen += collects;
  st->last_gc_id = id + (uint64_t)n - 1;
  r->run_left = (uint64_t)n; r->run_id = id; r->run_fates = fates;
  r->run_time_ns = time_ns; r->run_stream = stream;
  return MPT_OK;
}

int mpt_reader_next(mpt_reader *r, mpt_event *ev)
{
  if (r->failed) return MPT_ERR;
  if (r->follow) r->input_done = 0;  /* look again for appended bytes */
  if (r->run_left) {
    memset(ev, 0, sizeof *ev);
    ev->kind = r->run_fates & 1 ? MPT_EV_PROMOTE : MPT_EV_COLLECT;
    r->run_fates >>= 1;
    ev->stream = r->run_stream;
    ev->id = r->run_id++;
    ev->time_ns = r->run_time_ns;
    r->run_left--;
    return MPT_OK;
  }
  for (;;) {
    if (r->cp >= r->cend) {
      if (r->ended) return MPT_END;
      int type, c = next_chunk(r, &type);
      if (c < 0) return MPT_ERR;
      if (c == 0) return r->failed ? MPT_ERR : MPT_END;
      if (type == MPT_CHUNK_HEADER) return fail(r, "second trace header");
      if (type == MPT_CHUNK_END) {
        r->end_time = get_var(r) * r->info.time_unit_ns;
        r->total_samples = get_var(r);
        r->lost_samples = get_var(r);
        r->ended = 1;
        r->cp = r->cend;
        return r->failed ? MPT_ERR : MPT_END;
      }
      if (r->cstream > 4096) return fail(r, "stream id out of range");
      continue;
    }
    memset(ev, 0, sizeof *ev);
    ev->stream = r->cstream;
    if (r->ctype == MPT_CHUNK_SNAPSHOT) {
      int rc = snap_record(r, ev);
      if (rc == SNAP_NEXT) continue;
      return rc;
    }
    stream_state *st = stream(r, r->cstream);
    if (!st) return fail(r, "out of memory");
    uint8_t tag = *r->cp++;
    if ((tag >= TAG_ALLOC && tag < TAG_ALLOC + MPT_SRC_COUNT)
        || (tag >= TAG_ALLOC_CUT && tag < TAG_ALLOC_CUT + MPT_SRC_COUNT)) {
      get_time(r, st, ev);
      return alloc_fields(r, st, ev, tag);
    }
    if (tag >= TAG_ALLOC_COMPACT && r->info.format_version >= 3) {
      const uint8_t *rec = r->cp - 1;
      if (alloc_fields(r, st, ev, tag) != MPT_OK) return MPT_ERR;
      size_t len = (size_t)(r->cp - rec);
      if (len <= MPT_REPEAT_MAX) {
        uint8_t b[8] = { 0 };
        memcpy(b, rec, len);
        uint64_t k = mpt_repeat_key(b, len);
        if (r->info.format_version >= 4) mpt_repeat_keep(st->repeat, mpt_repeat_set(k), k);
        else st->repeat[mpt_repeat_slot(k)] = k;
      }
      get_time(r, st, ev);
      return r->failed ? MPT_ERR : MPT_OK;
    }
    if (tag >= TAG_ALLOC_REPEAT && tag < TAG_ALLOC_REPEAT + 32
        && r->info.format_version >= 3) {
      uint64_t k = r->info.format_version >= 4
        ? mpt_repeat_use(st->repeat, tag - TAG_ALLOC_REPEAT)
        : st->repeat[tag - TAG_ALLOC_REPEAT];
      size_t len = (size_t)(k >> 56);
      if (len == 0) return fail(r, "repeat of an allocation record never kept");
      uint8_t b[8];
      for (int i = 0; i < 8; i++) b[i] = (uint8_t)(k >> (8 * i));
      /* The kept record's fields, as if they were here. */
      const uint8_t *cp = r->cp, *cend = r->cend;
      r->cp = b + 1; r->cend = b + len;
      int rc = alloc_fields(r, st, ev, b[0]);
      r->cp = cp; r->cend = cend;
      if (rc != MPT_OK) return MPT_ERR;
      get_time(r, st, ev);
      return r->failed ? MPT_ERR : MPT_OK;
    }
    switch (tag) {
    case TAG_PROMOTE_NEXT: case TAG_COLLECT_NEXT:
      if (r->info.format_version < 4) return fail(r, "unknown event tag");
      MPT_FALLTHROUGH;
    case TAG_PROMOTE: case TAG_COLLECT: {
      int promote = tag == TAG_PROMOTE || tag == TAG_PROMOTE_NEXT;
      ev->kind = promote ? MPT_EV_PROMOTE : MPT_EV_COLLECT;
      st->last_gc_id += tag == TAG_PROMOTE || tag == TAG_COLLECT
        ? (uint64_t)mpt_unzigzag(get_var(r)) : 1;
      ev->id = st->last_gc_id;
      ev->time_ns = st->last_time * r->info.time_unit_ns;
      if (!promote) r->collects_seen++;
      return r->failed ? MPT_ERR : MPT_OK;
    }
    case TAG_COLLECT_RUN: {
      if (r->info.format_version < 3) return fail(r, "unknown event tag 0x22");
      uint64_t id = st->last_gc_id + (uint64_t)mpt_unzigzag(get_var(r));
      uint64_t n = get_var(r);
      if (r->failed) return MPT_ERR;
      uint64_t open = r->allocs_seen > r->collects_seen
        ? r->allocs_seen - r->collects_seen : 0;
      if (n < 2 || n > MPT_MAX_COLLECT_RUN || n > open)
        return fail(r, "collection run longer than the allocations not yet collected");
      r->collects_seen += n;
      st->last_gc_id = id + n - 1;
      ev->kind = MPT_EV_COLLECT;
      ev->id = id;
      ev->time_ns = st->last_time * r->info.time_unit_ns;
      r->run_left = n - 1; r->run_id = id + 1; r->run_fates = 0;
      r->run_time_ns = ev->time_ns; r->run_stream = ev->stream;
      return MPT_OK;
    }
    case TAG_FATES: {
      if (r->info.format_version < 5) return fail(r, "unknown event tag 0x26");
      uint64_t id = st->last_gc_id + (uint64_t)mpt_unzigzag(get_var(r));
      uint64_t bits = get_var(r);
      if (r->failed) return MPT_ERR;
      if (bits < 2 || bits >> (MPT_MAX_FATES + 1))
        return fail(r, "fates of no block, or of more than 56");
      /* the first now, the others from run_left */
      ev->time_ns = st->last_time * r->info.time_unit_ns;
      if (start_fates(r, st, ev->stream, ev->time_ns, id, bits) != MPT_OK)
        return MPT_ERR;
      return mpt_reader_next(r, ev);
    }
    case TAG_STACK_WINDOW: {
      /* The stream's previous stack (innermost first) loses its
         outermost [drop] frames and gains [n] beyond them. */
      if (r->info.format_version < 5) return fail(r, "unknown event tag 0x27");
      uint64_t drop = get_var(r), n = get_var(r);
      if (r->failed) return MPT_ERR;
      uint32_t most = r->info.format_version >= 9 ? MPT_MAX_WINDOW
                                                  : MPT_MAX_FRAMES;
      if (drop > st->stack_len || n > most - (st->stack_len - drop))
        return fail(r, "stack window beyond the previous stack or too deep");
      uint32_t len = st->stack_len - (uint32_t)drop;
      /* Version 9: with runs. */
      if (get_plain_ids(r, st, st->stack + len, n,
                        r->info.format_version >= 9, 1) != MPT_OK)
        return MPT_ERR;
      st->stack_len = len + (uint32_t)n;
      continue;
    }
    case TAG_STRING_NEXT: case TAG_LOCATION_NEXT:
      if (r->info.format_version < 5) return fail(r, "unknown event tag");
      MPT_FALLTHROUGH;
    case TAG_STRING: case TAG_LOCATION: {
      int next = tag == TAG_STRING_NEXT || tag == TAG_LOCATION_NEXT;
      int rc = tag == TAG_STRING || tag == TAG_STRING_NEXT
        ? define_string(r, st, next) : define_location(r, st, next);
      if (rc != MPT_OK) return MPT_ERR;
      continue;
    }
    case TAG_MAJOR_CYCLE_MARK:
      if (r->info.format_version < 2) return fail(r, "unknown event tag");
      ev->kind = MPT_EV_MAJOR_CYCLE;
      get_time(r, st, ev);
      st->last_stats.major_collections += (uint64_t)mpt_unzigzag(get_var(r));
      ev->heap = st->last_stats;
      return r->failed ? MPT_ERR : MPT_OK;
    case TAG_MAJOR_CYCLE:
      ev->kind = MPT_EV_MAJOR_CYCLE;
      get_time(r, st, ev);
      ev->heap.heap_words = get_var(r);
      ev->heap.live_words = get_var(r);
      ev->heap.minor_collections = get_var(r);
      ev->heap.major_collections = get_var(r);
      ev->heap.compactions = get_var(r);
      ev->heap.promoted_words = get_var(r);
      if (r->info.format_version >= 2) {
        mpt_heap_stats *l = &st->last_stats;
        ev->heap.heap_words = l->heap_words += (uint64_t)mpt_unzigzag(ev->heap.heap_words);
        ev->heap.live_words = l->live_words += (uint64_t)mpt_unzigzag(ev->heap.live_words);
        ev->heap.minor_collections = l->minor_collections +=
          (uint64_t)mpt_unzigzag(ev->heap.minor_collections);
        ev->heap.major_collections = l->major_collections +=
          (uint64_t)mpt_unzigzag(ev->heap.major_collections);
        ev->heap.compactions = l->compactions += (uint64_t)mpt_unzigzag(ev->heap.compactions);
        ev->heap.promoted_words = l->promoted_words +=
          (uint64_t)mpt_unzigzag(ev->heap.promoted_words);
      }
      return r->failed ? MPT_ERR : MPT_OK;
    default:
      if (tag > TAG_SIMPLE + MPT_EV_MAJOR_CYCLE && tag <= TAG_SIMPLE + MPT_EV_LOST) {
        ev->kind = (enum mpt_event_kind)(tag - TAG_SIMPLE);
        get_time(r, st, ev);
        ev->arg = get_var(r);
        return r->failed ? MPT_ERR : MPT_OK;
      }
      if (tag >= TAG_MINOR_GC_FATES_MIN && tag <= TAG_MINOR_GC_FATES_MAX
          && r->info.format_version >= 5) {
        /* the MINOR_GC now, its fates from run_left */
        ev->kind = MPT_EV_MINOR_GC;
        get_time(r, st, ev);
        ev->arg = ++st->last_minor_gc;
        if (start_fates(r, st, ev->stream, ev->time_ns, st->last_gc_id + 1, tag)
            != MPT_OK)
          return MPT_ERR;
        return r->failed ? MPT_ERR : MPT_OK;
      }
      if (tag == TAG_SIMPLE + MPT_EV_MINOR_GC
          || (tag == TAG_MINOR_GC_NEXT && r->info.format_version >= 4)) {
        ev->kind = MPT_EV_MINOR_GC;
        get_time(r, st, ev);
        ev->arg = tag == TAG_MINOR_GC_NEXT ? 2 /* zigzag(1) */ : get_var(r);
        if (r->info.format_version >= 3)
          ev->arg = st->last_minor_gc += (uint64_t)mpt_unzigzag(ev->arg);
        return r->failed ? MPT_ERR : MPT_OK;
      }
      {
        char m[64];
        snprintf(m, sizeof m, "unknown event tag 0x%02x", tag);
        return fail(r, m);
      }
    }
  }
}

void mpt_reader_close(mpt_reader *r)
{
  if (!r) return;
  if (r->file) fclose(r->file);
  if (r->dctx) LZ4F_freeDecompressionContext(r->dctx);
  for (uint32_t s = 0; s < r->nstreams; s++) {
    stream_state *st = &r->streams[s];
    for (uint32_t i = 0; i < st->nstr; i++) free(st->strings[i]);
    free(st->strings); free(st->loc_map); free(st->stack);
  }
  for (uint32_t i = 1; i < r->nlocs; i++) free((void *)r->locs[i].entries);
  for (int i = 0; i < 4; i++) free(r->strs[i]);
  free(r->streams); free(r->locs); free(r->index.slots);
  free(r->plain); free(r->stack_out);
  for (size_t i = 0; i < r->snap.nowned; i++) free(r->snap.owned[i]);
  free(r->snap.owned); free(r->snap.strs); free(r->snap.edges);
  free(r);
}

/* gen_snapshot.c: synthetic traces with heap snapshots of known retention,
   through the shared codec's encoder, for the retainers tests.

   usage: gen_snapshot small OUT   the graph below, with one sampled block
          gen_snapshot chain N OUT a global holding a list of N cells, in
                                   SNAPSHOT chunks of 64 KiB (for cuts);
                                   with --sample-every K, every Kth cell
                                   is sampled at "push (queue.ml:1)", as
                                   memprof samples a long Queue (each
                                   sampled cell's retainer path is as
                                   long as the list before it)
          gen_snapshot periodic N EVERY_MS END_MS OUT
                                   N snapshots, the kth at k * EVERY_MS ms
                                   (walk k, pause k ms): a global holding a
                                   list of k cells of 2 fields (24 bytes
                                   each); the trace ends at END_MS ms
   options (after the others): --exe PATH, the executable named in the
   header (default /nonexistent/leak); --anchor ADDR, the runtime address
   of caml_globals in the snapshot (default 0: no native globals, as
   bytecode), which makes the tools look the global labels up in the
   executable's symbol table (the hostile-executable tests); --rate R, the
   sampling rate (default 0.01; 0, as memprof_rate=0 writes: snapshots
   only, so no ALLOC and Y carries no sample); --sample-every K (chain).

   small (words include headers):
     global G (label 0x1000) -> A(2 fields) -> B(1) -> D(3) -> E(1)
                                 A -> C (string, 10 words of data)
     stack "f (a.ml:3)"      -> F(1) -> E
     finaliser               -> ephemeron X (3 fields: link, data, key)
                                 data -> Y (4 fields, sampled: ALLOC id 42
                                 at "leaky (leak.ml:7)"), key (weak) -> A
     memprof (non-retaining) -> Y
   retained: G = A+B+C+D = 3+2+11+4 = 20 words, stack = F = 2 words,
   finaliser = X+Y = 4+5 = 9 words, E (shared) by no single root; live 33
   words.

          gen_snapshot small-swept OUT  the same graph as a sweep of the
                                    heap writes it (explicit ids, as
                                    memprof_snapshot_sweep=1): blocks in
                                    address order, ids without a block
                                    skipped, and two blocks no root
                                    reaches (one pointing at A), which
                                    readers drop: their analyses must be
                                    small's.

          gen_snapshot holders OUT  a list held by two roots at once:
     global "0x1000" -> L1 -> L2 -> L3   (cells of 2 fields: string, next)
     stack "f (a.ml:3)" -> L1            (the same list)
     global "0x1000" -> M1 -> M2         (a second list only the global holds)
   each cell's head a string of 3 words sampled at "leak_site (h.ml:5)"
   (S1..S3 in L, T1, T2 in M).  Holders of leak_site's blocks: the global
   reaches all 5 strings (through the list shape), 2 of them alone (T1,
   T2); the stack frame reaches S1..S3, none alone; S1..S3 are shared.

          gen_snapshot weak OUT     blocks reachable only through a weak
                                    reference:
     global "0x1000" -> W (a Weak array: abstract, 3 fields, all weak keys)
                     -> S (string, 3 words, sampled at "kept (w.ml:9)")
                     -> Z (2 fields, sampled at "cache (w.ml:2)")
     W -(weak)-> K (2 fields, sampled at "cache (w.ml:2)") -> K2 (string, 5)
   live: W 4 + S 4 + Z 3 + K 3 + K2 6 = 20 words = 160 B; the global
   retains W, S, Z (88 B), the weak references K and K2 (72 B).

          gen_snapshot huge OUT     blocks of 2^32 words and more (the
                                    graph keeps 32-bit sizes, the larger
                                    ones in a side map):
     global "0x1000" -> A (2 fields) -> H1 (abstract, 2^32 + 6 words,
                                           sampled at "big (h.ml:1)")
                                     -> H2 (abstract, 2^32 - 1 words)
     stack "f (a.ml:3)" -> S (1 field)
   live: A 3 + H1 2^32 + 7 + H2 2^32 + S 2 words = 68719476832 B; the
   global retains all but S's 16 B.

          gen_snapshot dead OUT     three major samples (ids 301-303, 10
                                    words, at "grow (d.ml:4)", 10 us); a
                                    snapshot at 20 us holds 301 and 303
                                    only; no COLLECT follows (the trace
                                    ends at 1 s as if 302's sweep had not
                                    come yet): 302 is dead from 20 us.
          gen_snapshot dead-incomplete OUT  the same, the snapshot flagged
                                    as missing blocks: proves nothing.
          gen_snapshot dead-swept OUT  the same swept (explicit ids): 302
                                    written too, reached only from another
                                    block no root reaches, and 303 only
                                    through 301: 302 is dead from 20 us.
          gen_snapshot fanin N OUT  N stack frames "f1 (a.ml:1)".. all
                                    holding one sampled block (id 401 at
                                    "shared_site (s.ml:1)", 4 words). */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof_trace_codec.h"

#define CHUNK (64 * 1024)

static FILE *out;
static uint8_t buf[CHUNK + 64 * 1024];
static mpt_encoder enc;
static int chunk_type = MPT_CHUNK_EVENTS;
static const char *executable = "/nonexistent/leak";
static uint64_t anchor;
static double rate = 0.01;
static long sample_every;       /* chain: every Kth cell sampled, 0: none */

static void flush(void)
{
  size_t used = mpt_enc_used(&enc);
  if (used) {
    uint8_t hdr[MPT_CHUNK_HEADER_BYTES];
    mpt_chunk_header(hdr, (enum mpt_chunk_type)chunk_type, 0, (uint32_t)used);
    fwrite(hdr, 1, sizeof hdr, out);
    fwrite(buf, 1, used, out);
  }
  mpt_enc_reset_buffer(&enc, buf, CHUNK);
}

static void room(size_t n) { if (mpt_enc_space(&enc) < n) flush(); }

static void begin(const char *path)
{
  out = fopen(path, "wb");
  if (!out) { perror(path); exit(1); }
  static uint8_t h[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10)];
  mpt_trace_info info = { .format_version = MPT_FORMAT_VERSION, .word_size = 64,
    .sampling_rate = rate, .max_frames = 16, .time_unit_ns = 1000, .pid = 1,
    .executable = executable, .hostname = "h", .ocaml_version = "5.3.0+memprof",
    .command_line = "leak" };
  size_t n = mpt_write_header_chunk(h, sizeof h, &info);
  fwrite(h, 1, n, out);
  static uint32_t stack[16];
  mpt_enc_init(&enc, buf, CHUNK, stack, 16);
}

static uint64_t end_time_us = 1000000;

static void end(void)
{
  flush();
  uint8_t e[64];
  size_t n = mpt_write_end_chunk(e, sizeof e, end_time_us, rate > 0, 0);
  fwrite(e, 1, n, out);
  fclose(out);
}

static uint32_t str_id;
static uint32_t string(const char *s)
{
  room(MPT_MAX_STRING + 32);
  mpt_enc_snap_string(&enc, ++str_id, s, strlen(s));
  return str_id;
}

/* small and small-swept: the trace up to the snapshot's BEGIN (with the
   ALLOC of Y, at "leaky (leak.ml:7)"), and its roots. */
static void small_begin(const char *path, mpt_snap_encoder *s)
{
  begin(path);
  if (rate > 0) {
    mpt_enc_string(&enc, 1, "leak.ml", 7);
    mpt_enc_string(&enc, 2, "leaky", 5);
    mpt_loc_entry_ids loc = { 1, 2, 7, 0, 10 };
    mpt_enc_location(&enc, 1, 0x4000, &loc, 1);
    uint32_t st[1] = { 1 };
    mpt_enc_alloc(&enc, 10, 42, 4, 1, MPT_SRC_MINOR, 0, st, 1);
    flush();
  }
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_enc_snap_begin(&enc, s, 20, 1, anchor, 1);
}

static void small_roots(mpt_snap_encoder *s, uint64_t a, uint64_t f, uint64_t x,
                        uint64_t y)
{
  uint32_t g = string("0x1000"), fl = string("f (a.ml:3)"), fin = string("finalisers");
  uint32_t mp = string("memprof");
  mpt_enc_snap_root(&enc, s, MPT_ROOT_GLOBAL, 0, g, 0, a);
  mpt_enc_snap_root(&enc, s, MPT_ROOT_STACK, 0, fl, 0, f);
  mpt_enc_snap_root(&enc, s, MPT_ROOT_FINALISER, 0, fin, 0, x);
  mpt_enc_snap_root(&enc, s, MPT_ROOT_MEMPROF, MPT_ROOT_NONRETAINING, mp, 0, y);
}

/* END with [nedges], and the end of the trace. */
static void small_end(mpt_snap_encoder *s, uint64_t nedges)
{
  mpt_enc_snap_end(&enc, s, 30, 12345, nedges, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void small(const char *path)
{
  mpt_snap_encoder s;
  small_begin(path, &s);
  /* Ids in discovery order: roots first, then breadth first. */
  enum { A = 1, F, X, Y, B, C, E, D };
  small_roots(&s, A, F, X, Y);
  uint64_t a[2] = { B, C }, fe[1] = { E }, xe[2] = { Y, A }, be[1] = { D }, de[1] = { E };
  mpt_enc_snap_block(&enc, &s, 0, 2, a, 2, UINT64_MAX);          /* A */
  mpt_enc_snap_block(&enc, &s, 0, 1, fe, 1, UINT64_MAX);         /* F */
  mpt_enc_snap_block(&enc, &s, 251, 3, xe, 2, 1);                /* X */
  if (rate > 0) mpt_enc_snap_sample(&enc, &s, 42);
  mpt_enc_snap_block(&enc, &s, 0, 4, NULL, 0, UINT64_MAX);       /* Y */
  mpt_enc_snap_block(&enc, &s, 0, 1, be, 1, UINT64_MAX);         /* B */
  mpt_enc_snap_block(&enc, &s, 252, 10, NULL, 0, UINT64_MAX);    /* C */
  mpt_enc_snap_block(&enc, &s, 0, 1, NULL, 0, UINT64_MAX);       /* E */
  mpt_enc_snap_block(&enc, &s, 0, 3, de, 1, UINT64_MAX);         /* D */
  small_end(&s, 7);
}

/* small's graph with explicit ids (see the top). */
static void small_swept(const char *path)
{
  mpt_snap_encoder s;
  small_begin(path, &s);
  /* Ids by address; DEAD1 and DEAD2 reached by no root. */
  enum { E = 2, A = 5, D = 6, DEAD1 = 7, Y = 9, B = 10, F = 12, C = 13, X = 15,
         DEAD2 = 16 };
  mpt_enc_snap_ids(&enc, &s, 16);
  small_roots(&s, A, F, X, Y);
  uint64_t a[2] = { B, C }, fe[1] = { E }, xe[2] = { Y, A }, be[1] = { D }, de[1] = { E },
           dead1[1] = { A };
  mpt_enc_snap_skip(&enc, &s, 1);
  mpt_enc_snap_block(&enc, &s, 0, 1, NULL, 0, UINT64_MAX);       /* E */
  mpt_enc_snap_skip(&enc, &s, 2);
  mpt_enc_snap_block(&enc, &s, 0, 2, a, 2, UINT64_MAX);          /* A */
  mpt_enc_snap_block(&enc, &s, 0, 3, de, 1, UINT64_MAX);         /* D */
  mpt_enc_snap_block(&enc, &s, 0, 1, dead1, 1, UINT64_MAX);      /* DEAD1 */
  mpt_enc_snap_skip(&enc, &s, 1);
  if (rate > 0) mpt_enc_snap_sample(&enc, &s, 42);
  mpt_enc_snap_block(&enc, &s, 0, 4, NULL, 0, UINT64_MAX);       /* Y */
  mpt_enc_snap_block(&enc, &s, 0, 1, be, 1, UINT64_MAX);         /* B */
  mpt_enc_snap_skip(&enc, &s, 1);
  mpt_enc_snap_block(&enc, &s, 0, 1, fe, 1, UINT64_MAX);         /* F */
  mpt_enc_snap_block(&enc, &s, 252, 10, NULL, 0, UINT64_MAX);    /* C */
  mpt_enc_snap_skip(&enc, &s, 1);
  mpt_enc_snap_block(&enc, &s, 251, 3, xe, 2, 1);                /* X */
  mpt_enc_snap_block(&enc, &s, 0, 2, NULL, 0, UINT64_MAX);       /* DEAD2 */
  small_end(&s, 8);
}

/* One location, one ALLOC per id of [ids] (blocks of [wosize] words). */
static void allocs_at(uint32_t loc_id, const char *file, const char *fn, uint32_t line,
                      const uint64_t *ids, size_t n, uint64_t wosize)
{
  mpt_enc_string(&enc, 2 * loc_id - 1, file, strlen(file));
  mpt_enc_string(&enc, 2 * loc_id, fn, strlen(fn));
  mpt_loc_entry_ids loc = { 2 * loc_id - 1, 2 * loc_id, line, 0, 10 };
  mpt_enc_location(&enc, loc_id, 0x4000 + loc_id, &loc, 1);
  uint32_t st[1] = { loc_id };
  for (size_t i = 0; i < n; i++) mpt_enc_alloc(&enc, 10, ids[i], wosize, 1, MPT_SRC_MAJOR, 0, st, 1);
}

static void holders(const char *path)
{
  begin(path);
  uint64_t ids[5] = { 101, 102, 103, 104, 105 };
  allocs_at(1, "h.ml", "leak_site", 5, ids, 5, 3);
  flush();
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0, 1);
  /* Ids in discovery order: roots first, then breadth first. */
  enum { L1 = 1, M1, S1, L2, T1, M2, S2, L3, T2, S3 };
  uint32_t g = string("0x1000"), f = string("f (a.ml:3)");
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, L1);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_STACK, 0, f, 0, L1);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 1, M1);
  uint64_t l1[2] = { S1, L2 }, m1[2] = { T1, M2 }, l2[2] = { S2, L3 }, m2[1] = { T2 }, l3[1] = { S3 };
  mpt_enc_snap_block(&enc, &s, 0, 2, l1, 2, UINT64_MAX);        /* L1 */
  mpt_enc_snap_block(&enc, &s, 0, 2, m1, 2, UINT64_MAX);        /* M1 */
  mpt_enc_snap_sample(&enc, &s, 101);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* S1 */
  mpt_enc_snap_block(&enc, &s, 0, 2, l2, 2, UINT64_MAX);        /* L2 */
  mpt_enc_snap_sample(&enc, &s, 104);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* T1 */
  mpt_enc_snap_block(&enc, &s, 0, 2, m2, 1, UINT64_MAX);        /* M2 */
  mpt_enc_snap_sample(&enc, &s, 102);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* S2 */
  mpt_enc_snap_block(&enc, &s, 0, 2, l3, 1, UINT64_MAX);        /* L3 */
  mpt_enc_snap_sample(&enc, &s, 105);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* T2 */
  mpt_enc_snap_sample(&enc, &s, 103);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* S3 */
  /* walked by a forked child in 2.5 ms, 3 MB of private memory */
  mpt_enc_snap_walk(&enc, MPT_WALK_FORK, 2500000, 3000000);
  mpt_enc_snap_end(&enc, &s, 30, 1000, 8, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void huge(const char *path)
{
  begin(path);
  uint64_t big[1] = { 401 };
  allocs_at(1, "h.ml", "big", 1, big, 1, (1ull << 32) + 6);
  flush();
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0, 1);
  enum { A = 1, S, H1, H2 };
  uint32_t g = string("0x1000"), f = string("f (a.ml:3)");
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, A);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_STACK, 0, f, 0, S);
  uint64_t ae[2] = { H1, H2 };
  mpt_enc_snap_block(&enc, &s, 0, 2, ae, 2, UINT64_MAX);                  /* A */
  mpt_enc_snap_block(&enc, &s, 0, 1, NULL, 0, UINT64_MAX);                /* S */
  mpt_enc_snap_sample(&enc, &s, 401);
  mpt_enc_snap_block(&enc, &s, 251, (1ull << 32) + 6, NULL, 0, UINT64_MAX); /* H1 */
  mpt_enc_snap_block(&enc, &s, 251, (1ull << 32) - 1, NULL, 0, UINT64_MAX); /* H2 */
  mpt_enc_snap_end(&enc, &s, 30, 1000, 2, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void weak(const char *path)
{
  begin(path);
  uint64_t kept[1] = { 201 }, cache[2] = { 202, 203 };
  allocs_at(1, "w.ml", "kept", 9, kept, 1, 3);
  allocs_at(2, "w.ml", "cache", 2, cache, 2, 2);
  flush();
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0, 1);
  enum { W = 1, S, Z, K, K2 };
  uint32_t g = string("0x1000");
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, W);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 1, S);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 2, Z);
  uint64_t we[1] = { K }, ke[1] = { K2 };
  mpt_enc_snap_block(&enc, &s, 251, 3, we, 1, 0);                /* W: its key is weak */
  mpt_enc_snap_sample(&enc, &s, 201);
  mpt_enc_snap_block(&enc, &s, 252, 3, NULL, 0, UINT64_MAX);    /* S */
  mpt_enc_snap_sample(&enc, &s, 202);
  mpt_enc_snap_block(&enc, &s, 0, 2, NULL, 0, UINT64_MAX);      /* Z */
  mpt_enc_snap_sample(&enc, &s, 203);
  mpt_enc_snap_block(&enc, &s, 0, 2, ke, 1, UINT64_MAX);        /* K */
  mpt_enc_snap_block(&enc, &s, 252, 5, NULL, 0, UINT64_MAX);    /* K2 */
  mpt_enc_snap_end(&enc, &s, 30, 1000, 2, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

/* dead, dead-incomplete ([end_flags]) and dead-swept ([swept]). */
static void dead(const char *path, uint32_t end_flags, int swept)
{
  begin(path);
  uint64_t ids[3] = { 301, 302, 303 };
  allocs_at(1, "d.ml", "grow", 4, ids, 3, 10);
  flush();
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0, 1);
  uint32_t g = string("0x1000");
  if (!swept) {
    mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, 1);
    mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 1, 2);
    mpt_enc_snap_sample(&enc, &s, 301);
    mpt_enc_snap_block(&enc, &s, 0, 10, NULL, 0, UINT64_MAX);
    mpt_enc_snap_sample(&enc, &s, 303);
    mpt_enc_snap_block(&enc, &s, 0, 10, NULL, 0, UINT64_MAX);
  } else {
    /* ids: 1 the block of 303, 3 an unreachable block pointing at 302's
       (4), 6 the block of 301, pointing at 303's */
    mpt_enc_snap_ids(&enc, &s, 8);
    mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, 6);
    uint64_t to302[1] = { 4 }, to303[1] = { 1 };
    mpt_enc_snap_sample(&enc, &s, 303);
    mpt_enc_snap_block(&enc, &s, 0, 10, NULL, 0, UINT64_MAX);
    mpt_enc_snap_skip(&enc, &s, 1);
    mpt_enc_snap_block(&enc, &s, 0, 1, to302, 1, UINT64_MAX);
    mpt_enc_snap_sample(&enc, &s, 302);
    mpt_enc_snap_block(&enc, &s, 0, 10, NULL, 0, UINT64_MAX);
    mpt_enc_snap_skip(&enc, &s, 1);
    mpt_enc_snap_sample(&enc, &s, 301);
    mpt_enc_snap_block(&enc, &s, 0, 10, to303, 1, UINT64_MAX);
  }
  mpt_enc_snap_end(&enc, &s, 30, 1000, swept ? 2 : 0, end_flags);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void fanin(long n, const char *path)
{
  begin(path);
  uint64_t id[1] = { 401 };
  allocs_at(1, "s.ml", "shared_site", 1, id, 1, 4);
  flush();
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, 0, 1);
  for (long i = 1; i <= n; i++) {
    char label[64];
    snprintf(label, sizeof label, "f%ld (a.ml:%ld)", i, i);
    mpt_enc_snap_root(&enc, &s, MPT_ROOT_STACK, 0, string(label), 0, 1);
  }
  mpt_enc_snap_sample(&enc, &s, 401);
  mpt_enc_snap_block(&enc, &s, 252, 4, NULL, 0, UINT64_MAX);
  mpt_enc_snap_end(&enc, &s, 30, 1000, 0, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void chain(long n, const char *path)
{
  begin(path);
  if (sample_every > 0) {
    mpt_enc_string(&enc, 1, "queue.ml", 8);
    mpt_enc_string(&enc, 2, "push", 4);
    mpt_loc_entry_ids loc = { 1, 2, 1, 0, 10 };
    mpt_enc_location(&enc, 1, 0x4001, &loc, 1);
    uint32_t st[1] = { 1 };
    for (long i = sample_every; i <= n; i += sample_every) {
      room(64);
      mpt_enc_alloc(&enc, 10, (uint64_t)i, 2, 1, MPT_SRC_MAJOR, 0, st, 1);
    }
    flush();
  }
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, anchor, 1);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, string("0x2000"), 0, 1);
  for (long i = 1; i <= n; i++) {
    uint64_t next = (uint64_t)i + 1;
    room(64);
    if (sample_every > 0 && i % sample_every == 0) mpt_enc_snap_sample(&enc, &s, (uint64_t)i);
    mpt_enc_snap_block(&enc, &s, 0, 2, &next, i < n, UINT64_MAX);
  }
  mpt_enc_snap_end(&enc, &s, 30, 1000, (uint64_t)n - 1, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void periodic(long n, long every_ms, long end_ms, const char *path)
{
  begin(path);
  end_time_us = (uint64_t)end_ms * 1000;
  for (long k = 1; k <= n; k++) {
    uint64_t t = (uint64_t)(k * every_ms) * 1000;
    chunk_type = MPT_CHUNK_SNAPSHOT;
    mpt_snap_encoder s;
    mpt_enc_snap_begin(&enc, &s, t, (uint64_t)k, 0, 1);
    str_id = 0;                 /* string ids are local to a snapshot */
    mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, string("0x3000"), 0, 1);
    for (long i = 1; i <= k; i++) {
      uint64_t next = (uint64_t)i + 1;
      room(64);
      mpt_enc_snap_block(&enc, &s, 0, 2, &next, i < k, UINT64_MAX);
    }
    mpt_enc_snap_end(&enc, &s, t, (uint64_t)k * 1000000, (uint64_t)k - 1, 0);
    flush();
  }
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

int main(int argc, char **argv)
{
  static const struct { const char *mode; int nargs; } modes[] = {
    { "small", 3 }, { "small-swept", 3 }, { "holders", 3 }, { "weak", 3 }, { "huge", 3 }, { "dead", 3 },
    { "dead-incomplete", 3 }, { "dead-swept", 3 }, { "chain", 4 }, { "fanin", 4 }, { "periodic", 6 } };
  int nargs = 0;
  for (size_t m = 0; argc >= 2 && m < sizeof modes / sizeof modes[0]; m++)
    if (strcmp(argv[1], modes[m].mode) == 0) nargs = modes[m].nargs;
  if (argc < nargs) nargs = 0;
  for (int i = nargs; nargs && i < argc; i += 2) {
    if (i + 1 < argc && strcmp(argv[i], "--exe") == 0) executable = argv[i + 1];
    else if (i + 1 < argc && strcmp(argv[i], "--anchor") == 0) anchor = strtoull(argv[i + 1], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--rate") == 0) rate = atof(argv[i + 1]);
    else if (i + 1 < argc && strcmp(argv[i], "--sample-every") == 0) sample_every = atol(argv[i + 1]);
    else nargs = 0;
  }
  const char *mode = argc >= 2 ? argv[1] : "";
  if (nargs == 3 && strcmp(mode, "small") == 0) small(argv[2]);
  else if (nargs == 3 && strcmp(mode, "small-swept") == 0) small_swept(argv[2]);
  else if (nargs == 3 && strcmp(mode, "holders") == 0) holders(argv[2]);
  else if (nargs == 3 && strcmp(mode, "weak") == 0) weak(argv[2]);
  else if (nargs == 3 && strcmp(mode, "huge") == 0) huge(argv[2]);
  else if (nargs == 3 && strcmp(mode, "dead") == 0) dead(argv[2], 0, 0);
  else if (nargs == 3 && strcmp(mode, "dead-incomplete") == 0) dead(argv[2], MPT_SNAP_INCOMPLETE, 0);
  else if (nargs == 3 && strcmp(mode, "dead-swept") == 0) dead(argv[2], 0, 1);
  else if (nargs == 4 && strcmp(mode, "chain") == 0) chain(atol(argv[2]), argv[3]);
  else if (nargs == 4 && strcmp(mode, "fanin") == 0) fanin(atol(argv[2]), argv[3]);
  else if (nargs == 6)
    periodic(atol(argv[2]), atol(argv[3]), atol(argv[4]), argv[5]);
  else {
    fprintf(stderr, "usage: gen_snapshot small OUT | small-swept OUT | holders OUT | weak OUT | huge OUT | dead[-incomplete|-swept] OUT | "
            "fanin N OUT | chain N OUT | periodic N EVERY_MS END_MS OUT"
            "  [--exe PATH] [--anchor ADDR] [--rate R] [--sample-every K]\n");
    return 2;
  }
  return 0;
}

/* gen_snapshot.c: synthetic traces with heap snapshots of known retention,
   through the shared codec's encoder, for the retainers tests.

   usage: gen_snapshot small OUT   the graph below, with one sampled block
          gen_snapshot chain N OUT a global holding a list of N cells, in
                                   SNAPSHOT chunks of 64 KiB (for cuts)
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
   only, so no ALLOC and Y carries no sample).

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
   words. */

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

static void small(const char *path)
{
  begin(path);
  if (rate > 0) {
    /* The ALLOC of Y: location "leaky (leak.ml:7)". */
    mpt_enc_string(&enc, 1, "leak.ml", 7);
    mpt_enc_string(&enc, 2, "leaky", 5);
    mpt_loc_entry_ids loc = { 1, 2, 7, 0, 10 };
    mpt_enc_location(&enc, 1, 0x4000, &loc, 1);
    uint32_t st[1] = { 1 };
    mpt_enc_alloc(&enc, 10, 42, 4, 1, MPT_SRC_MINOR, 0, st, 1);
    flush();
  }
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, anchor, 1);
  /* Ids in discovery order: roots first, then breadth first. */
  enum { A = 1, F, X, Y, B, C, E, D };
  uint32_t g = string("0x1000"), f = string("f (a.ml:3)"), fin = string("finalisers");
  uint32_t mp = string("memprof");
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, g, 0, A);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_STACK, 0, f, 0, F);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_FINALISER, 0, fin, 0, X);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_MEMPROF, MPT_ROOT_NONRETAINING, mp, 0, Y);
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
  mpt_enc_snap_end(&enc, &s, 30, 12345, 7, 0);
  flush();
  chunk_type = MPT_CHUNK_EVENTS;
  end();
}

static void chain(long n, const char *path)
{
  begin(path);
  chunk_type = MPT_CHUNK_SNAPSHOT;
  mpt_snap_encoder s;
  mpt_enc_snap_begin(&enc, &s, 20, 1, anchor, 1);
  mpt_enc_snap_root(&enc, &s, MPT_ROOT_GLOBAL, 0, string("0x2000"), 0, 1);
  for (long i = 1; i <= n; i++) {
    uint64_t next = (uint64_t)i + 1;
    room(64);
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
  int nargs = argc < 2 ? 0 : strcmp(argv[1], "chain") == 0 ? 4
            : strcmp(argv[1], "periodic") == 0 ? 6 : 3;
  for (int i = nargs; i < argc; i += 2) {
    if (i + 1 < argc && strcmp(argv[i], "--exe") == 0) executable = argv[i + 1];
    else if (i + 1 < argc && strcmp(argv[i], "--anchor") == 0) anchor = strtoull(argv[i + 1], NULL, 0);
    else if (i + 1 < argc && strcmp(argv[i], "--rate") == 0) rate = atof(argv[i + 1]);
    else nargs = 0;
  }
  if (argc >= 3 && nargs == 3 && strcmp(argv[1], "small") == 0) small(argv[2]);
  else if (argc >= 4 && nargs == 4) chain(atol(argv[2]), argv[3]);
  else if (argc >= 6 && nargs == 6)
    periodic(atol(argv[2]), atol(argv[3]), atol(argv[4]), argv[5]);
  else {
    fprintf(stderr, "usage: gen_snapshot small OUT | chain N OUT | periodic N EVERY_MS END_MS OUT"
            "  [--exe PATH] [--anchor ADDR] [--rate R]\n");
    return 2;
  }
  return 0;
}

/* retime.c: retime IN OUT: copy a trace (5.x+memprof format, without heap
   snapshots) with its event times replaced by an allocation clock, for
   the tests whose verdict depends on times (report_tests.py,
   test_race_flag): a trace's times are wall-clock time, which a loaded
   machine stretches at random (the process waits for a core), so that a
   view computed from them varies from run to run; the program's own
   events, with a fixed seed, do not.

   The clock: every event's time is the samples allocated before it (the
   sum of the ALLOC events' nsamples), one time unit (1 us) per sample:
   each sample stands for 1 / rate words allocated, so time then advances
   with the program's allocation, as wall-clock time does on an idle
   machine.  Everything else is copied: ids, sizes, samples, stacks (each
   location and its strings defined again in the stream that first uses
   it, under the trace's global location id), GC and domain events.
   Written uncompressed, in the current format version.  Exit 0, or 1
   with a one-line message. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memprof_trace_codec.h"

#define STREAMS 128                /* stream slots in the format */
#define BUF (256 * 1024)
#define MAX_STACK 4096

typedef struct {
  mpt_encoder e;
  uint8_t buf[BUF];
  uint32_t prev[MAX_STACK];
  uint8_t *defined;                /* per global location id, ndefined */
  size_t ndefined;
  uint32_t next_str;               /* string ids given in this stream */
  int used;
} stream;

static stream *streams[STREAMS];
static FILE *out;

static void die(const char *what)
{
  fprintf(stderr, "retime: %s\n", what);
  exit(1);
}

static void put(const uint8_t *p, size_t n)
{
  if (fwrite(p, 1, n, out) != n) die("cannot write the output");
}

static void flush_stream(int k)
{
  stream *s = streams[k];
  size_t used = mpt_enc_used(&s->e);
  if (!used) return;
  static uint8_t hdr[MPT_CHUNK_HEADER_BYTES];
  mpt_chunk_header(hdr, MPT_CHUNK_EVENTS, (uint16_t)k, (uint32_t)used);
  put(hdr, sizeof hdr);
  put(s->buf, used);
  mpt_enc_reset_buffer(&s->e, s->buf, sizeof s->buf);
}

/* The encoder of stream [k], with room for [bytes] more. */
static mpt_encoder *enc(int k, size_t bytes)
{
  if (!streams[k]) {
    streams[k] = calloc(1, sizeof *streams[k]);
    if (!streams[k]) die("out of memory");
    mpt_enc_init(&streams[k]->e, streams[k]->buf, sizeof streams[k]->buf, streams[k]->prev, MAX_STACK);
  }
  if (mpt_enc_space(&streams[k]->e) < bytes) flush_stream(k);
  return &streams[k]->e;
}

static uint32_t define_string(int k, const char *str)
{
  size_t len = strlen(str);
  if (len > MPT_MAX_STRING) len = MPT_MAX_STRING;
  uint32_t id = ++streams[k]->next_str;
  mpt_enc_string(enc(k, MPT_MAX_DEF_BYTES), id, str, len);
  return id;
}

/* Define global location [loc] in stream [k] before its first use. */
static void define_location(mpt_reader *r, int k, uint32_t loc)
{
  stream *s = streams[k];
  if (loc >= s->ndefined) {
    size_t n = 2 * (size_t)loc + 16;
    s->defined = realloc(s->defined, n);
    if (!s->defined) die("out of memory");
    memset(s->defined + s->ndefined, 0, n - s->ndefined);
    s->ndefined = n;
  }
  if (s->defined[loc]) return;
  s->defined[loc] = 1;
  const mpt_location *l = mpt_reader_location(r, loc);
  mpt_loc_entry_ids ids[MPT_MAX_INLINED];
  uint32_t n = l && l->n < MPT_MAX_INLINED ? l->n : l ? MPT_MAX_INLINED : 0;
  for (uint32_t i = 0; i < n; i++) {
    const mpt_loc_entry *x = &l->entries[i];
    ids[i] = (mpt_loc_entry_ids){ define_string(k, x->file ? x->file : ""),
                                  define_string(k, x->function ? x->function : ""),
                                  x->line, x->start_char, x->end_char };
  }
  mpt_enc_location(enc(k, MPT_MAX_DEF_BYTES), loc, l ? l->address : 0, ids, n);
}

int main(int argc, char **argv)
{
  if (argc != 3) die("usage: retime IN OUT");
  char err[256];
  mpt_reader *r = mpt_reader_open(argv[1], err, sizeof err);
  if (!r) die(err);
  out = fopen(argv[2], "wb");
  if (!out) die("cannot create the output");
  mpt_trace_info info = *mpt_reader_info(r);
  info.format_version = MPT_FORMAT_VERSION;
  info.flags &= ~MPT_FLAG_COMPRESSED;
  info.time_unit_ns = 1000;
  static uint8_t hb[MPT_MAGIC_LEN + MPT_CHUNK_HEADER_BYTES + 128 + 4 * (MPT_MAX_STRING + 10)];
  size_t n = mpt_write_header_chunk(hb, sizeof hb, &info);
  if (!n) die("header too large");
  put(hb, n);
  uint64_t clock = 0, samples = 0;
  mpt_event ev;
  int k;
  while ((k = mpt_reader_next(r, &ev)) == MPT_OK) {
    if (ev.stream >= STREAMS) die("stream out of range");
    int st = (int)ev.stream;
    mpt_encoder *e = enc(st, MPT_MAX_EVENT_BYTES(0));
    switch (ev.kind) {
    case MPT_EV_ALLOC: {
      uint32_t len = ev.truncated && ev.stack_len ? ev.stack_len - 1 : ev.stack_len;
      if (len > MAX_STACK) die("stack too deep");
      for (uint32_t i = 0; i < len; i++) define_location(r, st, ev.stack[i]);
      e = enc(st, MPT_MAX_EVENT_BYTES(len));
      mpt_enc_alloc(e, clock, ev.id, ev.wosize, ev.nsamples, ev.source, ev.truncated, ev.stack, len);
      clock += ev.nsamples;
      samples += ev.nsamples;
      break;
    }
    case MPT_EV_PROMOTE: mpt_enc_promote(e, ev.id); break;
    case MPT_EV_COLLECT: mpt_enc_collect(e, ev.id); break;
    case MPT_EV_MAJOR_CYCLE: mpt_enc_major_cycle(e, clock, &ev.heap); break;
    case MPT_EV_MINOR_GC: case MPT_EV_COMPACT_BEGIN: case MPT_EV_COMPACT_END:
    case MPT_EV_DOMAIN_START: case MPT_EV_DOMAIN_STOP: case MPT_EV_TRACE_START:
    case MPT_EV_TRACE_STOP: case MPT_EV_FORK: case MPT_EV_LOST:
      mpt_enc_simple(e, ev.kind, clock, ev.arg);
      break;
    default: die("heap snapshots are not retimed");
    }
  }
  if (k != MPT_END) die(mpt_reader_error(r));
  for (int i = 0; i < STREAMS; i++) if (streams[i]) flush_stream(i);
  uint8_t eb[64];
  put(eb, mpt_write_end_chunk(eb, sizeof eb, clock, samples, 0));
  if (fclose(out)) die("cannot write the output");
  for (int i = 0; i < STREAMS; i++)
    if (streams[i]) { free(streams[i]->defined); free(streams[i]); }
  mpt_reader_close(r);
  return 0;
}

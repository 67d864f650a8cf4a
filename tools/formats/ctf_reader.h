/* ctf_reader.h: streaming reader of memtrace CTF traces, versions 1-3.

   Written from the specification of memtrace's CTF format (the format
   notes of the memtrace library, not part of this repository; section
   numbers below refer to it).  It yields the event
   model of runtime/caml/memprof_trace_codec.h (mpt_event, mpt_location), so
   analyses never know which format they read:
   - ALLOC/PROMOTE/COLLECT events only (CTF has no GC events);
   - time_ns = (event time - trace start) * 1000 (CTF times are in us);
   - stream = the packet's domain (version 3), 0 otherwise;
   - stack = dense location ids (1..count, in order of first appearance of
     the CTF location code), innermost frame first;
   - location.address = the CTF location code; entries innermost first
     (CTF records are outermost first and are reversed);
   - source: 0 minor, 1 major, 2 external -> MPT_SRC_CUSTOM.

   Contracts: input is never trusted.  A violation of the spec's reader
   checks gives CTF_ERR with a one-line message (ctf_reader_error).  A file
   cut inside a packet ends the stream after the last complete packet, with
   ctf_reader_truncated() != 0.  Memory is bounded by the locations and
   per-domain decoder state (at most CTF_MAX_DOMAINS domains), not by the
   file size: one 32 KiB packet is buffered at a time. */

#ifndef OCAML_MEMPROF_CTF_READER_H
#define OCAML_MEMPROF_CTF_READER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "memprof_trace_codec.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define CTF_MAX_PACKET 32768
#define CTF_MAX_DOMAINS 256
#define CTF_MAX_FRAMES (1u << 18)

enum { CTF_END = 0, CTF_OK = 1, CTF_ERR = -1 };

typedef struct {
  int version;                   /* of packet 0 */
  double sample_rate;
  uint32_t word_size;            /* bits */
  uint64_t start_us;             /* trace start, us since the epoch */
  uint64_t pid;
  uint16_t initial_domain;
  const char *executable, *host, *runtime_params, *context;
} ctf_header;

typedef struct {
  uint64_t packets;              /* packets read, packet 0 included */
  uint64_t location_packets;     /* packets holding only location events */
  uint64_t skipped_packets;      /* foreign pid */
  uint64_t location_events;
  uint64_t verified_packets;     /* cache verifier present and checked */
  uint64_t largest_packet;
  uint32_t max_backtrace;
} ctf_stats;

typedef struct ctf_reader ctf_reader;

/* Open [path] (or a memory buffer that must outlive the reader) and read
   packet 0.  NULL with a message in [err] on failure. */
ctf_reader *ctf_reader_open(const char *path, char *err, size_t errlen);
ctf_reader *ctf_reader_open_mem(const uint8_t *data, size_t len,
                                char *err, size_t errlen);
/* Does [p] (n bytes of a file's beginning) look like a CTF trace? */
int ctf_probe(const uint8_t *p, size_t n);

const ctf_header *ctf_reader_header(const ctf_reader *r);
const ctf_stats *ctf_reader_stats(const ctf_reader *r);
/* CTF_OK (ev filled; ev->stack valid until the next call), CTF_END,
   CTF_ERR. */
int ctf_reader_next(ctf_reader *r, mpt_event *ev);
uint32_t ctf_reader_location_count(const ctf_reader *r);
/* id in 1..count; NULL otherwise.  A code used but never defined has
   n = 0 entries. */
const mpt_location *ctf_reader_location(const ctf_reader *r, uint32_t id);
const char *ctf_reader_error(const ctf_reader *r);
int ctf_reader_truncated(const ctf_reader *r);
/* Following a file while it is written (see mpt_reader_follow): with [on],
   a packet cut by the current end of the file is read again from its start
   by a later call instead of ending the trace as truncated. */
void ctf_reader_follow(ctf_reader *r, int on);
/* Bytes consumed so far and total size (0 when unknown): progress. */
void ctf_reader_progress(const ctf_reader *r, uint64_t *done, uint64_t *total);
void ctf_reader_close(ctf_reader *r);

#endif

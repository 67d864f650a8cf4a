/* analysis.h: the engine every subcommand runs on.

   It turns the event stream of a trace into *completed samples*: one
   record per sampled block with its whole life (allocation, promotion,
   collection or "still live at the end"), attached to a node of a call
   tree that interns stacks.  Filters (shared by all subcommands) are
   applied to completed samples, because several of them (collected in a
   window, lifetime) are only decidable once the block's life is known.

   Memory: the live-object table holds one record per live sample; the call
   tree holds one node per distinct (caller path, location) pair; both are
   bounded by the trace's live samples and locations, not by its length.

   Estimates (documented in `info`): one sample stands for 1/lambda words,
   so a block with n samples accounts for n / lambda * word_bytes bytes
   (header word included, as in memtrace) and for n / (lambda * (wosize+1))
   objects. */

#ifndef OCAML_MEMPROF_ANALYSIS_H
#define OCAML_MEMPROF_ANALYSIS_H

#include <regex.h>
#include <stdint.h>
#include <stdio.h>

#include "trace_input.h"

#define AN_NEVER UINT64_MAX    /* t_collect of a block live at the end */

/* ---- filters ---- */

#define AN_MAX_PATTERNS 16
#define AN_MAX_DOMAINS 64

typedef struct {
  uint64_t lo, hi;             /* ns since trace start, inclusive */
  int on;
} an_window;

typedef struct an_filter {
  an_window alloc, live, collected;
  int ndomains;
  uint32_t domains[AN_MAX_DOMAINS];
  unsigned sources;            /* bit (1 << mpt_source); 0 = all */
  uint64_t min_size, max_size; /* block size in bytes (wosize * word) */
  uint64_t min_life, max_life; /* ns; live-at-end blocks use the end time */
  int nfocus, nignore, nhide;
  regex_t focus[AN_MAX_PATTERNS], ignore[AN_MAX_PATTERNS], hide[AN_MAX_PATTERNS];
  /* hide[i]'s preset keeps the locations a function of which keep[i]
     matches (presets.h), when has_keep[i] */
  regex_t keep[AN_MAX_PATTERNS];
  unsigned char has_keep[AN_MAX_PATTERNS];
  const char *presets_file;    /* --presets-file's (in argv), or NULL */
} an_filter;

void an_filter_init(an_filter *f);
void an_filter_free(an_filter *f);
/* If argv[*i] is a filter option, consume it (and its argument), return 1;
   return -1 with a one-line message in [err] for a missing or bad value;
   0 otherwise. */
int an_filter_option(an_filter *f, int argc, char **argv, int *i, char *err, size_t errlen);
extern const char an_filter_help[];
/* Does [f] filter anything (some option given)? */
int an_filter_active(const an_filter *f);
/* Does --hide (or --preset) remove location [l] from stacks? */
int an_filter_hides(const an_filter *f, const mpt_location *l);

/* Parse "1.5", "1.5s", "300ms", "20us", "10ns", "2m": a duration in ns. */
int parse_time(const char *s, uint64_t *ns);
/* Parse "A,B" (either side may be empty) into a window. */
int parse_window(const char *s, an_window *w);
/* Parse "64", "4k", "1M", "2GB" (decimal: 1M = 10^6 bytes) or "4Ki",
   "1MiB" (binary: 1Mi = 2^20 bytes) into bytes. */
int parse_size(const char *s, uint64_t *bytes);

/* ---- call tree ---- */

typedef struct {
  uint32_t parent;             /* node 0 is the root (empty stack) */
  uint32_t loc;                /* location id of the innermost frame */
  uint32_t depth;
  uint8_t flags;               /* AN_NODE_* */
} an_node;

#define AN_NODE_FOCUS 1        /* some frame on the path matches --focus */
#define AN_NODE_IGNORE 2       /* some frame on the path matches --ignore */
/* (bit 0x80 is internal to analysis.c) */

/* ---- completed samples ---- */

typedef struct {
  uint64_t id;                 /* the block's id in its trace */
  uint32_t node;               /* stack after --hide */
  uint32_t nsamples;
  uint64_t wosize;
  uint64_t t_alloc, t_collect; /* ns; t_collect AN_NEVER when live at the end */
  uint32_t domain;
  uint8_t source, promoted;
} an_sample;

typedef struct {
  uint64_t events[MPT_EV_LOST + 1];
  uint64_t unknown_promote, unknown_collect, duplicate_alloc;
  uint64_t samples_total, samples_kept;
  uint64_t samples_no_location;  /* kept, site without debug information */
  uint64_t end_time;           /* latest event time of the trace being
                                  read (or of the last one), ns */
  uint64_t max_end_time;       /* the largest end_time over the traces */
} an_stats;

typedef struct an_ctx an_ctx;

/* A sample completed by a collection reaches on_sample right after its
   COLLECT event reached on_event; a sample that a complete heap snapshot
   does not hold (unreachable then, swept later: snapdeath.h) right after
   that snapshot's END event, with t_collect the snapshot's time; the
   samples still live at the end of a trace come after all its events. */
typedef struct {
  void *u;
  void (*on_event)(void *u, an_ctx *c, const mpt_event *ev); /* every event */
  void (*on_sample)(void *u, an_ctx *c, const an_sample *s); /* kept samples */
} an_callbacks;

/* Open the traces [paths] (read one after the other, merged: locations
   with the same contents are one location; times are from each trace's
   own start) for analysis with filter [f] (owned by the caller; [paths]
   and [f] must outlive the context).  The first trace is opened here: on
   failure prints "ocaml-memprof: <msg>" and returns NULL. */
an_ctx *an_open(const char *const *paths, size_t npaths, const an_filter *f);
/* Read all the traces.  Returns 0, or 1 after printing the error.  Warns
   on stderr about truncated files; prints a progress line when stderr is
   a terminal and the read lasts more than 2 s.  With several traces, one
   that cannot be read, is malformed, or has another sampling rate or word
   size than the first is skipped with a warning.  With cb->on_sample NULL,
   samples are not tracked at all (no call tree, no live table): a pure
   decode-and-count pass. */
int an_run(an_ctx *c, const an_callbacks *cb);
void an_close(an_ctx *c);

/* ---- following traces while they are written (top --follow) ----
   A context made by an_follow_open follows any number of traces, each
   with its reader and state (location map, live samples) kept between
   reads, so that a read costs what was appended since the previous one. */
an_ctx *an_follow_open(const an_filter *f);
/* Read what has been appended to trace [path] since the last call (the
   first call opens it and makes its header the context's when it is the
   first).  When its writer has gone (pid checked on this host, before
   reading) or its end record is read, the trace is read to its end, its
   samples still live are completed and its state freed: it is done and
   later calls return 0 at once.  Returns 0; -1 when the file has no
   readable header yet (try again later); 1 after a warning (malformed,
   or another sampling rate or word size: the trace is dropped, done). */
int an_follow_read(an_ctx *c, const char *path, const an_callbacks *cb);
int an_follow_done(const an_ctx *c, const char *path);
/* At the end of a refresh: read, as an_follow_read would, every trace
   followed before whose path was not read since the previous call (its
   file deleted or renamed, or no longer selected: its open file is read
   until its writer has gone); a trace never opened is dropped (with a
   note when its file has gone).  When a
   followed path has been deleted, replaced by another file or truncated,
   one note says so (the open file is what is read).  Returns how many
   traces are not done. */
size_t an_follow_rest(an_ctx *c, const an_callbacks *cb);
/* Give cb->on_sample the samples still live in the traces not done, as if
   their traces ended now (at their latest event); they stay live, and the
   statistics do not count them. */
void an_follow_live(an_ctx *c, const an_callbacks *cb);
/* Bytes read from the files and events decoded so far. */
void an_follow_work(const an_ctx *c, uint64_t *bytes, uint64_t *events);
/* After an_run: one note on stderr when the result is empty or mostly
   without source locations, saying why (no samples, filters, no -g). */
void an_print_hints(const an_ctx *c);

/* The first trace's header (sampling rate and word size are those of all
   the traces read). */
const ti_header *an_header(const an_ctx *c);
const an_stats *an_get_stats(const an_ctx *c);
/* The trace being read (the last one after an_run). */
ti_trace *an_trace(an_ctx *c);
int an_truncated(const an_ctx *c);
uint64_t an_traces_read(const an_ctx *c);
/* Traces read to their end record (the traced process ended cleanly). */
uint64_t an_traces_ended(const an_ctx *c);
/* Set while following traces being written: no truncation warnings. */
extern int an_quiet_truncation;
uint32_t an_node_count(const an_ctx *c);
const an_node *an_nodes(const an_ctx *c);
/* Locations (merged over the traces): ids 1..an_location_count. */
uint32_t an_location_count(const an_ctx *c);
const mpt_location *an_location(const an_ctx *c, uint32_t loc);

/* Bytes / objects represented by [nsamples] samples of [wosize] words;
   [x] / the sampling rate.  A trace of heap snapshots only (sampling
   rate 0) has no samples to scale: its estimates are 0, never NaN. */
double an_per_rate(const an_ctx *c, double x);
double an_bytes(const an_ctx *c, double nsamples);
double an_objects(const an_ctx *c, double nsamples, uint64_t wosize);

/* ---- naming of locations (interned per context) ---- */

typedef enum { AN_BY_FUNCTION, AN_BY_LOCATION, AN_BY_MODULE } an_keykind;
/* Key of a location as a string: "Main.f", "Main.f (main.ml:2:4-20)",
   "Main".  The pointer stays valid until an_close. */
const char *an_loc_key(an_ctx *c, uint32_t loc, an_keykind k);
/* Function name and "file:line" of a location's innermost entry. */
const char *an_loc_function(an_ctx *c, uint32_t loc);
void an_loc_fileline(an_ctx *c, uint32_t loc, const char **file, uint32_t *line);

/* Does a location match a pattern (function or file name of any inlined
   entry)?  an_location_matches: the same for a location of another
   reader (retainers' heap snapshots). */
int an_loc_matches(an_ctx *c, uint32_t loc, const regex_t *re);
int an_location_matches(const mpt_location *l, const regex_t *re);
/* Whether [l] is a callback frame's location (its last entry is the
   MPT_CALLBACK_MARKER entry, docs/trace-format.md): views name it
   "callback FUNCTION" (an_loc_function), filters match its entries. */
int an_is_callback_location(const mpt_location *l);
/* The library layers: the frames of every preset (the built-in ones and
   the user's presets file, whether or not --preset names them) and of
   [f]'s --hide patterns ([f] may be NULL).  A closure that such a frame
   holds is one it runs for the program (Lwt's bind resolving a promise);
   one that the program's own frame holds is a value it has (a server
   loop holding its request handler), not a callback. */
typedef struct an_layers an_layers;
an_layers *an_layers_new(const an_filter *f);
int an_layers_match(const an_layers *y, const mpt_location *l);
void an_layers_free(an_layers *y);
/* Hiding (--hide, --preset) is decided per stack: a frame is hidden when
   a pattern hides its location (an_filter_hides), or when it is library
   code (a frame of a library layer) called by a hidden frame or by one
   that a preset keeps (Lwt_main.run): Lwt's engine calling List.iter
   over its events, Lwt_io calling Bigarray.Array1.create for its
   buffers, are Lwt's work.  The program's own frames (in no layer) stay
   visible wherever they are called from, and library code the program
   calls stays visible.  an_hide_class: a location's part (AN_HIDDEN; or
   AN_KEPT, library code a preset keeps; or AN_ABSORBED, library code),
   which callers cache per location; an_hide_next: a frame's state
   (AN_SHOWN, AN_GONE, or AN_SHOWN_ABSORBING: shown, and what it calls is
   absorbed) from its class and the state of the frame that called it
   (the next one out; AN_SHOWN for the outermost). */
#define AN_HIDDEN 1
#define AN_ABSORBED 2
#define AN_KEPT 4
#define AN_SHOWN 0
#define AN_GONE 1
#define AN_SHOWN_ABSORBING 2
int an_hide_class(const an_filter *f, const an_layers *y, const mpt_location *l);
/* an_layers_match and an_hide_class cached per location id (ids of one
   reader), the layers made at first use from [f] (NULL: hiding nothing,
   the layers from the default presets file).  Zero-initialise, set f. */
typedef struct {
  const an_filter *f;
  an_layers *y;
  uint8_t *in_layer, *hide_class;   /* per id: 0 not yet, else 1 + answer */
  size_t in_layer_cap, hide_class_cap;
} an_layer_cache;
int an_cached_in_layer(an_layer_cache *k, uint32_t id, const mpt_location *l);
int an_cached_hide_class(an_layer_cache *k, uint32_t id, const mpt_location *l);
void an_layer_cache_free(an_layer_cache *k);   /* and zeroes it, f too */
static inline int an_hide_next(int cls, int caller)
{
  if (cls & AN_HIDDEN) return AN_GONE;
  if (cls & AN_KEPT) return AN_SHOWN_ABSORBING;
  return (cls & AN_ABSORBED) && caller != AN_SHOWN ? AN_GONE : AN_SHOWN;
}
/* The callback frames of a stack that say nothing the stack does not
   are dropped:
   - the frame that holds it (the next one out that is not a callback
     frame) is not in a library layer ([in_layer] says, for a location
     id: the caller caches an_layers_match);
   - the callback is running (its function is a frame inside it, or the
     frame that holds it), or a callback frame of the same function is
     inside it;
   - a function still running outside it encloses the callback's (it
     made or registered the closure: handle calling Lwt.bind with its
     continuation is handle's work).
   What is left names the callbacks that the library frames around them
   run for (Lwt's bind, once the program's function has returned, holds
   it while it resolves the promise that function gave).  [l] (the
   locations, innermost first) and [ids] (their ids, kept in step) are
   compacted in place; returns the new length.  Every view applies it
   (analysis.c to each sample's stack, the lwt command to creation
   sites). */
uint32_t an_drop_redundant_callbacks(const mpt_location **l, uint32_t *ids, uint32_t len,
                                     int (*in_layer)(void *u, uint32_t id), void *u);

/* Compile [pat] for stack option [opt] as every such option does (--focus,
   --ignore, --hide, top --callers/--callees, retainers --site): a POSIX
   extended regex.  0, or -1 with "bad value 'PAT' for OPT: REASON" in
   [err]. */
int an_regex_compile(regex_t *re, const char *opt, const char *pat, char *err, size_t errlen);

#endif

/* lwt_threads.h: Lwt's promises in a trace ("Lwt threads"): how many each
   creation site made, and which are still pending in each heap snapshot,
   with the callbacks they hold.

   Creation, from the samples: an allocation whose innermost frame is one of
   Lwt's promise constructors (lt_constructors in lwt_threads.c) belongs to
   one promise; a site's count is its samples / (rate x the constructor's
   words per promise), standard error sqrt(samples) / (rate x words).

   Pending promises, from each snapshot: every block of Lwt's pending shape
   (a record of one field, the state, pointing to a one-field block of
   Pending's constructor tag, pointing to a four-field callbacks record) is
   counted exactly, with the regular callbacks it holds.  Their creation
   sites come from those of their three blocks that were sampled:
   estimate = their samples / (rate x 9 words), the words that new_pending
   allocates per promise; pending promises none of whose blocks was
   sampled are in the exact total only.

   The layout is Lwt 5.6.1's (lwt.ml: `type ('a,'u,'c) promise =
   {mutable state}` and the GADT state Fulfilled | Rejected | Pending |
   Proxy, Pending being the third non-constant constructor, tag 2; the
   constructors Lwt.Pending_promises.new_pending, Lwt.Trivial_promises.return
   and .fail).  Checked against 5.6.1's source only (no other version's
   source was reachable); another layout counts nothing or miscounts.

   Sites by stack (the report's mode): a site is then an allocation's
   stack itself, its first LT_STACK_FRAMES locations (the key in names is
   their location ids, as bytes), and res->locs keeps the frames of every
   location those stacks use, so that the report's page can name the
   sites itself with whatever frames it hides.  The report reads each
   trace once more in this mode, for its Lwt view. */

#ifndef OCAML_MEMPROF_LWT_THREADS_H
#define OCAML_MEMPROF_LWT_THREADS_H

#include <stdint.h>

#include "analysis.h"
#include "heapgraph.h"

#define LT_PENDING_TAG 2       /* Pending among Lwt 5.x's state constructors */
#define LT_PENDING_WORDS 9     /* new_pending: callbacks 4+1, Pending 1+1, promise 1+1 */
#define LT_STACK_FRAMES 64     /* locations kept per stack, by stack */

typedef struct {
  uint32_t name;               /* string id in lt_result.names: "Fn (file:line)",
                                  or by stack its location ids */
  double created_samples;      /* samples at promise constructors */
  double created;              /* estimated promises created */
  double created_se;
} lt_site;

typedef struct {
  double samples;              /* samples of the pending promises' blocks */
  double callback_samples;     /* the same, each times its callbacks */
  double callback_samples_sq;  /* each times its callbacks squared (for se) */
} lt_pending_site;

typedef struct {
  uint64_t seq, time_ns;
  uint64_t pending, callbacks; /* exact, over the whole heap */
  uint64_t pending_sampled;    /* of which some block was sampled */
  lt_pending_site *by_site;    /* per lt_result.sites index, the first */
  size_t nby_site;             /* nby_site sites (those known then) */
} lt_snapshot;

/* A location's inlined frames, innermost first (sites by stack). */
typedef struct { char *function, *file; uint32_t line; } lt_frame;
typedef struct { lt_frame *frames; uint32_t n; int used; } lt_loc;

typedef struct {
  double rate;
  int by_stack;                /* names are stacks (location ids), see above */
  strpool *names;
  lt_loc *locs; size_t nlocs;  /* by stack: per trace location id */
  lt_site *sites; size_t nsites, sites_cap;
  lt_snapshot *snaps; size_t nsnaps, snaps_cap;
  uint64_t allocs_seen;        /* sampled allocations read */
  int truncated;
} lt_result;

/* Read trace [path] to its end.  [hiding] (may be NULL) names the frames
   that are not creation sites: the first frame of a promise's stack it
   does not hide is its creation site; with [by_stack], sites are whole
   stacks instead (hiding is not used).  0, or 1 after a one-line message. */
int lt_run(const char *path, const an_filter *hiding, int by_stack, lt_result *res);
void lt_free(lt_result *res);

/* The words per promise that the Lwt constructor at location [l] (an
   allocation's innermost) allocates, 0 when [l] is none of them. */
double lt_constructor_words(const mpt_location *l);

/* Whether the trace read has Lwt promises: samples at the constructors,
   or pending promises in a snapshot. */
int lt_found(const lt_result *res);

/* By stack: site [site]'s stack into [out], as location ids into
   res->locs, innermost first; returns how many. */
size_t lt_stack(const lt_result *res, uint32_t site, uint32_t out[LT_STACK_FRAMES]);

/* Estimates from samples (see above). */
double lt_estimate(const lt_result *res, double samples, double words);
double lt_estimate_se(const lt_result *res, double samples, double words);

#endif

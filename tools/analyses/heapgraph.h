/* heapgraph.h: heap snapshots of a trace, as graphs ready for dominators.

   hg_next reads a trace (through the reader API, trace_input.h) up to the
   end of its next heap snapshot and returns it as one rooted graph:
     node 0                     the super root
     nodes 1..HG_KINDS          one per root kind (enum mpt_root_kind), and
                                last the weak kind (HG_KIND_WEAK)
     next nlabels nodes         one per distinct (kind, label) of roots
     nodes base..base+nblocks-1 the blocks, block id b at node base+b-1
   with edges 0 -> kind -> label -> root targets -> strong block edges.
   Weak edges (ephemeron keys, Weak arrays' fields) are not in the graph,
   so dominators give what is retained; but the runtime walks them, so the
   blocks that only weak references reach (not cleared yet) are in the
   snapshot.  They hang under the weak kind node: it points at every
   weak target that no strong path reaches, so it dominates exactly the
   blocks reachable only through weak references, and the kinds' retained
   sizes plus what no kind alone retains add up to the live bytes.  Non-retaining roots (statmemprof's)
   reach, under the memprof kind node, only the blocks that no other root
   reaches: what is held by the profiler alone.
   Allocation events met on the way are remembered (id -> stack, samples,
   size), so blocks carrying a sample id know their allocation site.

   Memory: 4 bytes per edge plus 13 bytes per block (custom blocks and
   blocks of 2^32 words or more a map entry more), and while the snapshot
   is read 4 bytes per weak edge; the allocation table grows with the
   samples of the trace.  Node numbers and edge offsets are 32-bit: a
   snapshot of 2^31 blocks or more, or of 2^32 strong edges or more, is
   refused (it would need over 30 GB here).  The per-block arrays grow by
   doubling (realloc: moved by remapping, not copied) and are not cleared
   ahead, so capacity never written costs address space, not memory. */

#ifndef OCAML_MEMPROF_HEAPGRAPH_H
#define OCAML_MEMPROF_HEAPGRAPH_H

#include <stdint.h>

#include "trace_input.h"
#include "util.h"

/* The root kinds of the trace format, then one the graph adds: blocks
   reachable only through weak references (no root has this kind). */
#define HG_KIND_WEAK MPT_ROOT_KIND_COUNT
#define HG_KINDS (MPT_ROOT_KIND_COUNT + 1)

/* The wosize of a block of 2^32 - 1 words or more, in hg_snapshot.wosize
   (the size itself is in big_wosize). */
#define HG_WOSIZE_BIG UINT32_MAX

typedef struct {
  uint32_t stack_off, stack_len;  /* in hg_reader.stacks, innermost first */
  uint32_t nsamples;
  uint64_t wosize;
} hg_alloc;

typedef struct {
  uint32_t kind, flags;
  uint32_t label;               /* label node index, 0-based */
  uint64_t detail;
  uint64_t target;              /* block id */
} hg_root;

typedef struct {
  uint64_t seq, time_ns, pause_ns, anchor;
  int walk_mode;                /* WALK: enum mpt_snap_walk_mode; -1 none */
  uint64_t walk_ns, walk_extra_bytes;  /* WALK: the walk's time, a forked
                                          child's private memory */
  uint32_t ndomains;
  int complete;                 /* its END record was read */
  uint32_t end_flags;
  uint32_t nlabels, base, nblocks, n;
  uint32_t *label_kind, *label_str;   /* per label node: kind, string id */
  uint8_t *tag;                 /* per block, index b - 1 */
  uint32_t *wosize;             /* per block; HG_WOSIZE_BIG: in big_wosize */
  u64map big_wosize_of;         /* block id -> index in big_wosize */
  uint64_t *big_wosize;
  size_t nbig_wosize, big_wosize_cap;
  uint32_t *alloc;              /* per block: hg_alloc index + 1, or 0 */
  u64map custom_of;             /* block id -> index in custom[] */
  struct { uint32_t ident; uint64_t ext; } *custom; /* identifier string, out-of-heap bytes */
  size_t ncustom, custom_cap;
  uint64_t ext_total;
  uint32_t *off;                /* n + 1: node v's successors are
                                   adj[off[v] .. off[v + 1]) */
  uint32_t *adj;
  uint64_t nadj, nweak, nedges_file;
  uint32_t *weak_target;        /* block id of every weak edge, while read */
  size_t weak_cap;
  hg_root *roots; size_t nroots;
  size_t nheld_roots;           /* of which non-retaining (memprof's) */
} hg_snapshot;

typedef struct {
  ti_trace *t;
  const char *path;
  hg_alloc *allocs; size_t nallocs, allocs_cap;
  u64map alloc_ids;             /* ALLOC id -> index */
  uint32_t *stacks; size_t nstacks, stacks_cap;
  strpool *strs;                /* labels, identifiers */
  int truncated;
  uint64_t end_ns;              /* the latest event time read so far */
  char error[256];
} hg_reader;

/* 0, or -1 with a message in r->error. */
int hg_open(hg_reader *r, const char *path);
/* 1 with the next snapshot in *s (free it with hg_snapshot_free), 0 at the
   end of the trace, -1 with a message in r->error.  A snapshot cut short
   by the end of the file is returned with complete = 0. */
int hg_next(hg_reader *r, hg_snapshot *s);
void hg_snapshot_free(hg_snapshot *s);
void hg_close(hg_reader *r);

/* Did the trace end while a periodic snapshot was due?  The trace does
   not record memprof_snapshot_every_s or _every_cycles (the header holds
   argv, not OCAMLRUNPARAM), so this is inferred from the times of its
   [n] snapshots ([times_ns], increasing, from the trace start) and its
   end [end_ns]: they look periodic when there are at least two and their
   intervals, the first counted from the start of the trace, are regular
   (the longest at most 1.5 times the shortest); one is overdue when the
   trace ends longer after the last than that longest interval.  Returns
   1 then, with a one-line explanation (no newline) in [buf], else 0. */
int hg_snapshot_overdue(const uint64_t *times_ns, size_t n, uint64_t end_ns, char *buf, size_t len);

/* A custom block's identifier (a string of the reader's pool) and
   out-of-heap bytes: 1, or 0 for other blocks. */
static inline int hg_custom(const hg_snapshot *s, uint32_t b, uint32_t *ident, uint64_t *ext)
{
  uint32_t *i = u64map_get(&s->custom_of, b);
  if (!i) return 0;
  *ident = s->custom[*i].ident; *ext = s->custom[*i].ext;
  return 1;
}

uint64_t hg_big_wosize(const hg_snapshot *s, uint32_t b);

/* Words of block [b] (1-based), header excluded. */
static inline uint64_t hg_wosize(const hg_snapshot *s, uint32_t b)
{
  uint32_t w = s->wosize[b - 1];
  return w != HG_WOSIZE_BIG ? w : hg_big_wosize(s, b);
}

/* Bytes of a block (header included), per word size of the trace. */
static inline uint64_t hg_block_bytes(const hg_snapshot *s, uint32_t b)
{ return (hg_wosize(s, b) + 1) * 8; }

#endif

/* cmd_pprof.c: `ocaml-memprof pprof`: gzip-compressed profile.proto.

   A hand-written protobuf encoder (no library): messages are built into
   growable byte buffers; a nested message is built in its own buffer and
   appended with its key and length.  Message layout (field numbers of
   perftools.profiles.Profile):
     1 sample_type (ValueType: 1 type, 2 unit)    2 sample (1 location_id
     packed, 2 value packed)   3 mapping   4 location (1 id, 2 mapping_id,
     4 line: 1 function_id, 2 line)   5 function (1 id, 2 name,
     3 system_name, 4 filename)   6 string_table   9 time_nanos
     10 duration_nanos   11 period_type   12 period   14 default_sample_type
   One sample per call-tree node with data; its location ids are our
   location ids (>= 1) from the allocation site up to the root, and its
   values are alloc_objects, alloc_space, inuse_objects, inuse_space, all
   un-sampled (bytes = samples / lambda * word_bytes, objects = samples /
   (lambda * (wosize + 1))).  With --by type each sample has a label
   (3: 1 key, 2 str) "type" naming the OCaml type of its allocation
   (types.h), for pprof's -tagfocus, -tags and -tagroot.
   Functions are interned by (name, file).
   The result is deflated with zlib in gzip mode. */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "aggregate.h"
#include "cli.h"
#include "commands.h"
#include "report.h"
#include "types.h"
#include "util.h"

typedef struct { uint8_t *p; size_t n, cap; } pbuf;

static void pb_raw(pbuf *b, const void *d, size_t n)
{
  if (!n) return;                /* d may be NULL (an empty buffer) */
  grow_array((void **)&b->p, &b->cap, b->n + n, 1);
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

static void pb_varint(pbuf *b, uint64_t v)
{
  uint8_t t[10];
  size_t k = 0;
  while (v >= 0x80) { t[k++] = (uint8_t)(v | 0x80); v >>= 7; }
  t[k++] = (uint8_t)v;
  pb_raw(b, t, k);
}

static void pb_int(pbuf *b, unsigned field, uint64_t v)
{
  pb_varint(b, (uint64_t)field << 3);
  pb_varint(b, v);
}

static void pb_bytes(pbuf *b, unsigned field, const void *d, size_t n)
{
  pb_varint(b, (uint64_t)field << 3 | 2);
  pb_varint(b, n);
  pb_raw(b, d, n);
}

static void pb_msg(pbuf *b, unsigned field, pbuf *m)
{
  pb_bytes(b, field, m->p, m->n);
  m->n = 0;
}

static void pb_packed(pbuf *b, unsigned field, const uint64_t *v, size_t n, pbuf *tmp)
{
  tmp->n = 0;
  for (size_t i = 0; i < n; i++) pb_varint(tmp, v[i]);
  pb_bytes(b, field, tmp->p, tmp->n);
  tmp->n = 0;
}

typedef struct {
  strpool *strs;
  u64map funcs;                /* (name id << 32 | file id) -> function id */
  uint32_t nfuncs;
  pbuf fbuf;                   /* encoded Function messages */
} tables;

static uint32_t str_id(tables *t, const char *s)
{
  return strpool_intern(t->strs, s, strlen(s));
}

static uint32_t func_id(tables *t, const char *name, const char *file, pbuf *tmp)
{
  uint32_t ni = str_id(t, name), fi = str_id(t, file);
  uint64_t key = (uint64_t)ni << 32 | fi;
  uint32_t *v = u64map_get(&t->funcs, key);
  if (v) return *v;
  uint32_t id = ++t->nfuncs;
  u64map_put(&t->funcs, key, id);
  tmp->n = 0;
  pb_int(tmp, 1, id);
  /* name only: go tool pprof "demangles" a system_name equal to the name,
     simplifying away <...> and (...) (so "<unknown>" came out blank and
     "f.(fun)" as "f."); a name without system_name is left as it is. */
  pb_int(tmp, 2, ni);
  pb_int(tmp, 4, fi);
  pb_msg(&t->fbuf, 5, tmp);
  return id;
}

static int write_gzip(FILE *o, const uint8_t *d, size_t n)
{
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return -1;
  uint8_t out[1 << 16];
  z.next_in = (Bytef *)d;
  z.avail_in = (uInt)n;
  int r;
  do {
    z.next_out = out;
    z.avail_out = sizeof out;
    r = deflate(&z, Z_FINISH);
    size_t k = sizeof out - z.avail_out;
    if (fwrite(out, 1, k, o) != k) { deflateEnd(&z); return -1; }
  } while (r == Z_OK);
  deflateEnd(&z);
  return r == Z_STREAM_END ? 0 : -1;
}

static const char usage[] =
  "usage: ocaml-memprof pprof -o OUT.pb.gz [OPTIONS] TRACE...\n"
  "Write a gzip-compressed profile.proto for `go tool pprof`, with sample\n"
  "types alloc_objects, alloc_space, inuse_objects, inuse_space (default\n"
  "alloc_space), un-sampled from the trace's rate.\n"
  "  --live-at end|peak|TIME   what in-use means (end)\n"
  "  --by type         label each sample \"type\" with the OCaml type of the\n"
  "                    allocated value, read from the program's .cmt files\n"
  "  --cmt-path DIR    with --by type: also search DIR for .cmt files (repeatable)\n";

static int live_at_option(void *u, int argc, char **argv, int *i)
{
  const char **live_arg = u;
  if (strcmp(argv[*i], "--live-at")) return 0;
  if (!(*live_arg = cli_value(argc, argv, i)) || check_live_at(*live_arg)) return -1;
  return 1;
}

int cmd_pprof(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  cli_inputs in;
  cli_inputs_init(&in);
  const char *live_arg = "end";
  table_opts opts = { .mode = OUT_TEXT, .by = AN_BY_FUNCTION, .limit = 0 };
  int rc = report_parse(argc, argv, usage, &f, &in, &opts, TABLE_O | TABLE_TYPE, live_at_option,
                        &live_arg);
  const char *out = opts.out;
  if (rc < 0 && !out) rc = cli_usage_error("-o OUT.pb.gz is required");
  if (rc < 0 && (rc = cli_inputs_resolve(&in)) == 0) rc = -1;
  if (rc >= 0) { an_filter_free(&f); cli_inputs_free(&in); return rc; }
  an_ctx *c;
  nodeagg agg;
  rc = nodeagg_run(in.paths, in.npaths, &f, live_arg, &agg, &c);
  if (rc) { an_filter_free(&f); cli_inputs_free(&in); return rc; }

  const ti_header *h = an_header(c);
  types_map *types = opts.by_type ? types_open(c, opts.cmt_paths, opts.ncmt_paths) : NULL;
  tables t;
  memset(&t, 0, sizeof t);
  t.strs = strpool_new();
  u64map_init(&t.funcs, 1024);
  str_id(&t, "");
  pbuf prof = { 0 }, tmp = { 0 }, tmp2 = { 0 }, line = { 0 }, label = { 0 };
  static const char *const sample_types[4][2] = {
    { "alloc_objects", "count" }, { "alloc_space", "bytes" },
    { "inuse_objects", "count" }, { "inuse_space", "bytes" } };
  for (int k = 0; k < 4; k++) {
    pb_int(&tmp, 1, str_id(&t, sample_types[k][0]));
    pb_int(&tmp, 2, str_id(&t, sample_types[k][1]));
    pb_msg(&prof, 1, &tmp);
  }
  /* Samples, and the set of locations they use. */
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  uint8_t *used = NULL;
  size_t used_cap = 0;
  uint64_t *ids = NULL;
  size_t icap = 0;
  for (uint32_t i = 0; i < nn; i++) {
    nstat s = nodeagg_get(&agg, i);
    if (!s.blocks) continue;
    size_t d = 0;
    for (uint32_t n = i; n; n = nodes[n].parent) {
      grow_array((void **)&ids, &icap, d + 1, sizeof *ids);
      uint32_t loc = nodes[n].loc;
      ids[d++] = loc;
      if (loc >= used_cap) {
        size_t old = used_cap;
        grow_array((void **)&used, &used_cap, (size_t)loc + 1, 1);
        memset(used + old, 0, used_cap - old);
      }
      used[loc] = 1;
    }
    pb_packed(&tmp, 1, ids, d, &tmp2);
    uint64_t vals[4] = {
      (uint64_t)llround(an_per_rate(c, s.alloc_objects)), (uint64_t)llround(an_bytes(c, s.alloc_samples)),
      (uint64_t)llround(an_per_rate(c, s.live_objects)), (uint64_t)llround(an_bytes(c, s.live_samples)) };
    pb_packed(&tmp, 2, vals, 4, &tmp2);
    if (types) {
      pb_int(&label, 1, str_id(&t, "type"));
      pb_int(&label, 2, str_id(&t, types_of_node(types, i)));
      pb_msg(&tmp, 3, &label);
    }
    pb_msg(&prof, 2, &tmp);
  }
  if (types && types_close(types)) { rc = 1; goto done; }
  /* One mapping standing for the program; symbols are already resolved. */
  pb_int(&tmp, 1, 1);
  pb_int(&tmp, 5, str_id(&t, h->executable));
  pb_int(&tmp, 7, 1); pb_int(&tmp, 8, 1); pb_int(&tmp, 9, 1); pb_int(&tmp, 10, 1);
  pb_msg(&prof, 3, &tmp);
  for (uint32_t loc = 1; loc < used_cap; loc++) {
    if (!used[loc]) continue;
    const mpt_location *l = an_location(c, loc);
    pb_int(&tmp, 1, loc);
    pb_int(&tmp, 2, 1);
    if (!l || l->n == 0) {
      pb_int(&line, 1, func_id(&t, an_loc_key(c, loc, AN_BY_LOCATION), "", &tmp2));
      pb_msg(&tmp, 4, &line);
    } else {
      for (uint32_t k = 0; k < l->n; k++) {   /* innermost first, as pprof wants */
        const mpt_loc_entry *e = &l->entries[k];
        const char *fn = e->function && e->function[0] ? e->function : "??";
        pb_int(&line, 1, func_id(&t, fn, e->file ? e->file : "", &tmp2));
        pb_int(&line, 2, e->line);
        pb_msg(&tmp, 4, &line);
      }
    }
    pb_msg(&prof, 4, &tmp);
  }
  pb_raw(&prof, t.fbuf.p, t.fbuf.n);
  pb_int(&tmp, 1, str_id(&t, "space"));
  pb_int(&tmp, 2, str_id(&t, "bytes"));
  uint32_t n_strs = strpool_count(t.strs);
  for (uint32_t k = 0; k < n_strs; k++) {
    const char *s = strpool_get(t.strs, k);
    pb_bytes(&prof, 6, s, strlen(s));
  }
  pb_int(&prof, 9, h->start_wall_ns);
  pb_int(&prof, 10, an_get_stats(c)->max_end_time);
  pb_msg(&prof, 11, &tmp);
  pb_int(&prof, 12, (uint64_t)llround(an_bytes(c, 1)));
  pb_int(&prof, 14, str_id(&t, "alloc_space"));

  FILE *o = out_open(out);
  if (!o) { rc = 1; goto done; }
  rc = 0;
  if (write_gzip(o, prof.p, prof.n) < 0) {
    msg("compression or write error on %s\n", out);
    rc = 1;
  }
  rc |= out_close(o, out);
  if (types) types_print_hints(types);
done:
  types_free(types);
  free(prof.p); free(tmp.p); free(tmp2.p); free(line.p); free(label.p); free(t.fbuf.p);
  free(used); free(ids);
  u64map_free(&t.funcs);
  strpool_free(t.strs);
  nodeagg_free(&agg);
  an_filter_free(&f);
  an_close(c);
  cli_inputs_free(&in);
  return rc;
}

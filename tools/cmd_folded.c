/* cmd_folded.c: `ocaml-memprof folded`: folded stacks ("a;b;c 123") for
   flamegraph.pl, inferno and speedscope.

   One line per call-tree node that has samples: its path from the root,
   each location expanded into its inlined frames (outermost first), and the
   chosen value.  Paths are rebuilt by walking parent links into a scratch
   array; ';' inside names is replaced so it cannot split a frame. */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "commands.h"
#include "report.h"
#include "util.h"

static void on_sample(void *u, an_ctx *c, const an_sample *s)
{
  (void)c;
  nodeagg_add(u, s);
}

static void put_frame(FILE *o, const char *s)
{
  for (; *s; s++) putc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, o);
}

/* Print the frames of location [loc], outermost inlined entry first. */
static void put_location(FILE *o, an_ctx *c, uint32_t loc, int with_lines, int *first)
{
  const mpt_location *l = an_location(c, loc);
  if (!l || l->n == 0) {
    if (!*first) putc(';', o);
    *first = 0;
    put_frame(o, an_loc_function(c, loc));
    return;
  }
  for (uint32_t k = l->n; k-- > 0;) {
    const mpt_loc_entry *e = &l->entries[k];
    if (!*first) putc(';', o);
    *first = 0;
    put_frame(o, e->function && e->function[0] ? e->function : "??");
    if (with_lines) {
      fputs(" (", o);
      put_frame(o, e->file ? e->file : "");
      fprintf(o, ":%u)", e->line);
    }
  }
}

static const char usage[] =
  "usage: ocaml-memprof folded [OPTIONS] TRACE\n"
  "Print folded stacks (root;...;allocation-site VALUE), one per distinct stack.\n"
  "  --value alloc|live|samples|objects   value per stack: estimated allocated\n"
  "                    bytes (default), bytes live at --live-at, samples, objects\n"
  "  --live-at end|peak|TIME   for --value live (end)\n"
  "  --lines           add (file:line) to every frame\n"
  "  -o FILE           write to FILE\n";

int cmd_folded(int argc, char **argv)
{
  an_filter f;
  an_filter_init(&f);
  const char *path = NULL, *out = NULL, *live_arg = "end", *value = "alloc";
  int lines = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = an_filter_option(&f, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(a, "--lines")) lines = 1;
    else if (i + 1 < argc && !strcmp(a, "--value")) value = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--live-at")) live_arg = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "-o")) out = argv[++i];
    else if (a[0] == '-' && a[1]) return bad_option("folded", a);
    else if (!path) path = a;
    else return bad_option("folded", a);
  }
  int vk = !strcmp(value, "alloc") ? 0 : !strcmp(value, "live") ? 1
         : !strcmp(value, "samples") ? 2 : !strcmp(value, "objects") ? 3 : -1;
  if (vk < 0) return bad_option("folded", value);
  if (!path) { print_usage(stderr, usage, 1); return 2; }
  uint64_t live_at;
  if (resolve_live_at(live_arg, path, &f, &live_at)) return 1;
  an_ctx *c = an_open(path, &f);
  if (!c) return 1;
  nodeagg agg;
  nodeagg_init(&agg, live_at);
  an_callbacks cb = { &agg, NULL, on_sample };
  int rc = an_run(c, &cb);
  if (rc) { nodeagg_free(&agg); an_filter_free(&f); an_close(c); return rc; }
  FILE *o = out_open(out);
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  uint32_t *path_buf = NULL;
  size_t pcap = 0;
  double rate = an_header(c)->sampling_rate;
  for (uint32_t i = 0; i < nn; i++) {
    nstat s = nodeagg_get(&agg, i);
    if (!s.blocks) continue;
    double v = vk == 0 ? an_bytes(c, s.alloc_samples) : vk == 1 ? an_bytes(c, s.live_samples)
             : vk == 2 ? s.alloc_samples : s.alloc_objects / rate;
    long long iv = llround(v);
    if (iv <= 0) continue;
    size_t d = 0;
    for (uint32_t n = i; n; n = nodes[n].parent) {
      grow_array((void **)&path_buf, &pcap, d + 1, sizeof *path_buf);
      path_buf[d++] = nodes[n].loc;
    }
    int first = 1;
    if (d == 0) { fputs("<no backtrace>", o); first = 0; }
    while (d-- > 0) put_location(o, c, path_buf[d], lines, &first);
    fprintf(o, " %lld\n", iv);
  }
  rc = out_close(o, out);
  free(path_buf);
  nodeagg_free(&agg);
  an_filter_free(&f);
  an_close(c);
  return rc;
}

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

static void put_frame(FILE *o, const char *s)
{
  for (; *s; s++) putc(*s == ';' ? ':' : *s == '\n' ? ' ' : *s, o);
}

/* Print the frames of location [loc], outermost inlined entry first. */
static void put_location(FILE *o, an_ctx *c, uint32_t loc, int with_lines, int *first)
{
  const mpt_location *l = an_location(c, loc);
  if (!l || l->n == 0 || an_is_callback_location(l)) {
    /* a callback frame: one frame, "callback FUNCTION" */
    if (!*first) putc(';', o);
    *first = 0;
    put_frame(o, an_loc_function(c, loc));
    if (with_lines && l && l->n > 0) {
      fputs(" (", o);
      put_frame(o, l->entries[0].file ? l->entries[0].file : "");
      fprintf(o, ":%u)", l->entries[0].line);
    }
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
  "usage: ocaml-memprof folded [OPTIONS] TRACE...\n"
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
  stack_opts op;
  cli_inputs in;
  cli_inputs_init(&in);
  int rc = stack_opts_parse(&op, &f, &in, usage, 1, argc, argv);
  if (rc >= 0) { an_filter_free(&f); cli_inputs_free(&in); return rc; }
  an_ctx *c;
  nodeagg agg;
  rc = nodeagg_run(in.paths, in.npaths, &f, op.live_arg, &agg, &c);
  if (rc) { an_filter_free(&f); cli_inputs_free(&in); return rc; }
  FILE *o = out_open(op.out);
  if (!o) { rc = 1; goto done; }
  const an_node *nodes = an_nodes(c);
  uint32_t nn = an_node_count(c);
  uint32_t *path_buf = NULL;
  size_t pcap = 0;
  for (uint32_t i = 0; i < nn; i++) {
    nstat s = nodeagg_get(&agg, i);
    if (!s.blocks) continue;
    long long iv = llround(nstat_value(c, &s, op.value));
    if (iv <= 0) continue;
    size_t d = 0;
    for (uint32_t n = i; n; n = nodes[n].parent) {
      grow_array((void **)&path_buf, &pcap, d + 1, sizeof *path_buf);
      path_buf[d++] = nodes[n].loc;
    }
    int first = 1;
    if (d == 0) { fputs("<no backtrace>", o); first = 0; }
    while (d-- > 0) put_location(o, c, path_buf[d], op.lines, &first);
    fprintf(o, " %lld\n", iv);
  }
  rc = out_close(o, op.out);
done:
  free(path_buf);
  nodeagg_free(&agg);
  an_filter_free(&f);
  an_close(c);
  cli_inputs_free(&in);
  return rc;
}

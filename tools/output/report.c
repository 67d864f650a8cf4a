/* report.c: escaping, byte formatting, output-file handling and the
   option parsing shared by subcommands.  Kept separate so that every
   subcommand quotes CSV/JSON and reads its options identically. */

#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"
#include "cli.h"
#include "util.h"

void json_str(FILE *o, const char *s)
{
  putc('"', o);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    switch (*p) {
    case '"': fputs("\\\"", o); break;
    case '\\': fputs("\\\\", o); break;
    case '\n': fputs("\\n", o); break;
    case '\t': fputs("\\t", o); break;
    case '\r': fputs("\\r", o); break;
    default: {
      /* Bytes that are not UTF-8 (from a corrupt trace) become U+FFFD. */
      int n = *p < 0x80 ? 1 : utf8_seq_len(p);
      if (*p < 0x20 || *p == 0x7F) fprintf(o, "\\u%04x", *p);
      else if (n == 0) fputs("\\ufffd", o);
      else { fwrite(p, 1, (size_t)n, o); p += n - 1; }
    }
    }
  }
  putc('"', o);
}

void csv_str(FILE *o, const char *s)
{
  if (!strpbrk(s, ",\"\n\r")) { fputs(s, o); return; }
  putc('"', o);
  for (; *s; s++) {
    if (*s == '"') putc('"', o);
    putc(*s, o);
  }
  putc('"', o);
}

const char *human_bytes(double b, char *buf, size_t n)
{
  static const char *const units[] = { "B", "kB", "MB", "GB", "TB", "PB" };
  int u = 0;
  double v = b < 0 ? -b : b;
  while (v >= 1000 && u < 5) { v /= 1000; u++; }
  /* %.3g would print 999.5 kB as "1e+03 kB": the next unit instead */
  if (v >= 999.5 && u < 5) { v /= 1000; u++; }
  if (b < 0) v = -v;
  if (u == 0) snprintf(buf, n, "%.0f B", v);
  else snprintf(buf, n, "%.3g %s", v, units[u]);
  return buf;
}

FILE *out_open(const char *path)
{
  if (!path || strcmp(path, "-") == 0) return stdout;
  FILE *f = fopen(path, "wb");
  if (!f) {
    msg("cannot write %s: %s\n", path, strerror(errno));
    return NULL;
  }
  return f;
}

int out_close(FILE *f, const char *path)
{
  int bad = ferror(f);
  if (f == stdout) bad |= fflush(f) != 0;
  else bad |= fclose(f) != 0;
  if (bad) {
    msg("error writing %s\n", path ? path : "standard output");
    return 1;
  }
  return 0;
}

void print_usage(FILE *o, const char *text, int filters)
{
  fputs(text, o);
  fputc('\n', o);
  fputs(cli_inputs_help, o);
  if (filters) { fputc('\n', o); fputs(an_filter_help, o); }
}

int parse_keykind(const char *s, an_keykind *k)
{
  if (!strcmp(s, "function")) *k = AN_BY_FUNCTION;
  else if (!strcmp(s, "location")) *k = AN_BY_LOCATION;
  else if (!strcmp(s, "module")) *k = AN_BY_MODULE;
  else return -1;
  return 0;
}

int parse_count(const char *s, long *n)
{
  char *e;
  long v = strtol(s, &e, 10);
  if (e == s || *e || v < 0) return -1;
  *n = v;
  return 0;
}

int table_option(table_opts *t, unsigned which, int argc, char **argv, int *i)
{
  const char *a = argv[*i], *v;
  if ((which & TABLE_JSON) && !strcmp(a, "--json")) t->mode = OUT_JSON;
  else if ((which & TABLE_CSV) && !strcmp(a, "--csv")) t->mode = OUT_CSV;
  else if ((which & (TABLE_BY | TABLE_TYPE)) && !strcmp(a, "--by")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    if ((which & TABLE_TYPE) && !strcmp(v, "type")) t->by_type = 1;
    else if ((which & TABLE_BY) && parse_keykind(v, &t->by) == 0) t->by_type = 0;
    else
      return cli_bad_value(a, v, !(which & TABLE_BY) ? "type"
                                 : which & TABLE_TYPE ? "function, location, module or type"
                                 : "function, location or module"), -1;
  } else if ((which & TABLE_TYPE) && !strcmp(a, "--cmt-path")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (t->ncmt_paths == AN_MAX_PATTERNS) return cli_usage_error("--cmt-path: 16 at most"), -1;
    t->cmt_paths[t->ncmt_paths++] = v;
  } else if ((which & TABLE_N) && !strcmp(a, "-n")) {
    if (!(v = cli_value(argc, argv, i))) return -1;
    if (parse_count(v, &t->limit) < 0) return cli_bad_value(a, v, "a number of rows (0 = all)"), -1;
  } else if ((which & TABLE_O) && !strcmp(a, "-o")) {
    if (!(t->out = cli_value(argc, argv, i))) return -1;
  } else return 0;
  return 1;
}

int report_parse(int argc, char **argv, const char *usage, an_filter *f, cli_inputs *in,
                 table_opts *t, unsigned which,
                 int (*own)(void *u, int argc, char **argv, int *i), void *u)
{
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = cli_option(f, in, 0, argc, argv, &i);
    if (!k) k = table_option(t, which, argc, argv, &i);
    if (!k && cli_is_help(a)) { print_usage(stdout, usage, 1); return 0; }
    if (!k && own) k = own(u, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (a[0] == '-' && a[1]) return cli_unknown_option(a, usage, 1);
    cli_inputs_add(in, a);
  }
  return table_check_types(t);
}

int table_check_types(const table_opts *t)
{
  if (t->ncmt_paths && !t->by_type) return cli_usage_error("--cmt-path goes with --by type");
  return -1;
}

int check_live_at(const char *v)
{
  uint64_t t;
  if (!strcmp(v, "end") || !strcmp(v, "peak") || parse_time(v, &t) == 0) return 0;
  return cli_bad_value("--live-at", v, "end, peak or a time (1.5, 300ms, 2m)");
}

int stack_opts_parse(stack_opts *o, an_filter *f, cli_inputs *in, const char *usage,
                     int objects, int argc, char **argv)
{
  o->out = NULL;
  o->live_arg = "end";
  o->lines = 0;
  o->value = VALUE_ALLOC;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = cli_option(f, in, 0, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (cli_is_help(a)) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(a, "--lines")) o->lines = 1;
    else if (!strcmp(a, "--value")) {
      if (!(v = cli_value(argc, argv, &i))) return 2;
      if (!strcmp(v, "alloc")) o->value = VALUE_ALLOC;
      else if (!strcmp(v, "live")) o->value = VALUE_LIVE;
      else if (!strcmp(v, "samples")) o->value = VALUE_SAMPLES;
      else if (objects && !strcmp(v, "objects")) o->value = VALUE_OBJECTS;
      else return cli_bad_value(a, v, objects ? "alloc, live, samples or objects"
                                              : "alloc, live or samples");
    } else if (!strcmp(a, "--live-at")) {
      if (!(o->live_arg = cli_value(argc, argv, &i)) || check_live_at(o->live_arg)) return 2;
    } else if (!strcmp(a, "-o")) {
      if (!(o->out = cli_value(argc, argv, &i))) return 2;
    } else if (a[0] == '-' && a[1]) return cli_unknown_option(a, usage, 1);
    else cli_inputs_add(in, a);
  }
  int rc = cli_inputs_resolve(in);
  return rc ? rc : -1;
}

/* report.c: escaping, byte formatting, output-file handling and the
   option parsing shared by subcommands.  Kept separate so that every
   subcommand quotes CSV/JSON and reads its options identically. */

#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis.h"

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
    default:
      if (*p < 0x20) fprintf(o, "\\u%04x", *p);
      else putc(*p, o);
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
    fprintf(stderr, "ocaml-memprof: cannot write %s: %s\n", path, strerror(errno));
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
    fprintf(stderr, "ocaml-memprof: error writing %s\n", path ? path : "standard output");
    return 1;
  }
  return 0;
}

void print_usage(FILE *o, const char *text, int filters)
{
  fputs(text, o);
  if (filters) { fputc('\n', o); fputs(an_filter_help, o); }
}

int bad_option(const char *cmd, const char *opt)
{
  fprintf(stderr, "ocaml-memprof %s: unknown option or extra argument '%s' (see --help)\n",
          cmd, opt);
  return 2;
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
  if (*e || v < 0) return -1;
  *n = v;
  return 0;
}

int stack_opts_parse(stack_opts *o, an_filter *f, const char *cmd, const char *usage,
                     int objects, int argc, char **argv)
{
  const char *value = "alloc";
  o->path = o->out = NULL;
  o->live_arg = "end";
  o->lines = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int k = an_filter_option(f, argc, argv, &i);
    if (k < 0) return 2;
    if (k) continue;
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { print_usage(stdout, usage, 1); return 0; }
    else if (!strcmp(a, "--lines")) o->lines = 1;
    else if (i + 1 < argc && !strcmp(a, "--value")) value = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--live-at")) o->live_arg = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "-o")) o->out = argv[++i];
    else if (a[0] == '-' && a[1]) return bad_option(cmd, a);
    else if (!o->path) o->path = a;
    else return bad_option(cmd, a);
  }
  if (!strcmp(value, "alloc")) o->value = VALUE_ALLOC;
  else if (!strcmp(value, "live")) o->value = VALUE_LIVE;
  else if (!strcmp(value, "samples")) o->value = VALUE_SAMPLES;
  else if (objects && !strcmp(value, "objects")) o->value = VALUE_OBJECTS;
  else return bad_option(cmd, value);
  if (!o->path) { print_usage(stderr, usage, 1); return 2; }
  return -1;
}

/* report.c: escaping, byte formatting and output-file handling.  Kept
   separate so that every subcommand quotes CSV/JSON identically. */

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
    exit(1);
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

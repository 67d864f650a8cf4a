/* elf_symbols.c: see elf_symbols.h.

   The path comes from a trace header, so it is untrusted: it may name a
   FIFO (opening it for reading would wait for a writer, reading it would
   wait forever), a device (/dev/zero never ends; merely opening some, a
   watchdog or a tape, acts on the hardware), a directory, or a huge file.
   Only a regular file is opened (checked with stat before, and with fstat
   after in case the path changed in between; without blocking, in case
   it became a FIFO), and only the parts the symbol table needs are read
   with pread: the ELF header, the section headers, the symbol table and
   its string table, each bounds-checked against the file's size and
   against the caps below. */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf_symbols.h"

/* An executable's section headers are a few kilobytes, its symbol and
   string tables tens of megabytes at most for the largest OCaml programs;
   beyond these caps the file is not read further. */
#define SECTION_HEADERS_MAX ((uint64_t)16 << 20)
#define SYMBOLS_MAX ((uint64_t)ELF_SYMBOLS_MAX_MB << 20)

static uint64_t rd(const unsigned char *p, int n)
{
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

static int by_value(const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Read [len] bytes at [off] of [fd] into [b]: 0, or -1 (*why says). */
static int read_exact(int fd, uint64_t off, unsigned char *b, uint64_t len, const char **why)
{
  for (uint64_t done = 0; done < len;) {
    ssize_t k = pread(fd, b + done, len - done, (off_t)(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *why = k < 0 ? strerror(errno) : "the file is shorter than its headers say";
      return -1;
    }
    done += (uint64_t)k;
  }
  return 0;
}

/* [len] bytes at [off] of [fd] in a new buffer, or NULL (*why says). */
static unsigned char *read_at(int fd, uint64_t off, uint64_t len, const char **why)
{
  unsigned char *b = malloc(len ? len : 1);
  if (!b) { *why = "out of memory"; return NULL; }
  if (read_exact(fd, off, b, len, why) != 0) { free(b); return NULL; }
  return b;
}

/* Is [nm] (after "caml") the symbol of a module's block: Foo, Foo__Bar
   (no part after a "__" starting otherwise than with a capital: those
   are functions and constants, Foo__bar_123, Foo__code_begin)?  Returns
   where the module's name starts, or NULL.  Dune compiles an executable's
   modules as Dune__exe__Main (its "exe" part would fail the test): they
   are named without that prefix, by the module names of the sources. */
static const char *module_name(const char *nm)
{
  static const char dune_exe[] = "Dune__exe__";
  if (!strncmp(nm, dune_exe, sizeof dune_exe - 1)) nm += sizeof dune_exe - 1;
  if (nm[0] < 'A' || nm[0] > 'Z' || strchr(nm, '.') || strchr(nm, '$')) return NULL;
  for (const char *sep = strstr(nm, "__"); sep; sep = strstr(sep + 2, "__"))
    if (!(sep[2] >= 'A' && sep[2] <= 'Z')) return NULL;
  return nm;
}

/* The symbols of the symbol table [sym] (size [size], entries of [ent]
   bytes) whose names are in [str] (size [ssize]).  0, or -1 out of memory. */
static int collect(elf_symbols *e, const unsigned char *sym, uint64_t size, uint64_t ent,
                   const unsigned char *str, uint64_t ssize)
{
  for (uint64_t s = 0; s + ent <= size; s += ent) {
    uint64_t name = rd(sym + s, 4), value = rd(sym + s + 8, 8);
    if (name >= ssize || value == 0) continue;
    const char *nm = (const char *)str + name;
    size_t nl = strnlen(nm, ssize - name);
    if (nl == ssize - name || strncmp(nm, "caml", 4) != 0) continue;
    if (strcmp(nm, "caml_globals") == 0) { e->globals = value; e->have_globals = 1; continue; }
    const char *module = module_name(nm + 4);
    if (!module) continue;
    void *ns = realloc(e->syms, (e->n + 1) * sizeof *e->syms);
    char *copy = strdup(module);
    if (!ns || !copy) { free(copy); if (ns) e->syms = ns; return -1; }
    e->syms = ns;
    e->syms[e->n].value = value;
    e->syms[e->n].name = copy;
    e->n++;
  }
  return 0;
}

static int fail(elf_symbols *e, int fd, unsigned char *b1, unsigned char *b2, const char *reason,
                char *why, size_t whylen)
{
  snprintf(why, whylen, "%s", reason);
  free(b1);
  free(b2);
  if (fd >= 0) close(fd);
  elf_symbols_free(e);
  return -1;
}

int elf_symbols_load(elf_symbols *e, const char *path, char *why, size_t whylen)
{
  memset(e, 0, sizeof *e);
  const char *reason = NULL;
  if (!path[0]) return fail(e, -1, NULL, NULL, "the trace names no executable", why, whylen);
  struct stat st;
  if (stat(path, &st) != 0) return fail(e, -1, NULL, NULL, strerror(errno), why, whylen);
  if (!S_ISREG(st.st_mode)) return fail(e, -1, NULL, NULL, "not a regular file", why, whylen);
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return fail(e, -1, NULL, NULL, strerror(errno), why, whylen);
  if (fstat(fd, &st) != 0) return fail(e, fd, NULL, NULL, strerror(errno), why, whylen);
  if (!S_ISREG(st.st_mode)) return fail(e, fd, NULL, NULL, "not a regular file", why, whylen);
  uint64_t len = (uint64_t)st.st_size;
  unsigned char eh[64];
  if (len < sizeof eh) return fail(e, fd, NULL, NULL, "not an ELF file", why, whylen);
  if (read_exact(fd, 0, eh, sizeof eh, &reason) != 0) return fail(e, fd, NULL, NULL, reason, why, whylen);
  if (memcmp(eh, "\177ELF", 4) != 0 || eh[4] != 2 || eh[5] != 1)
    return fail(e, fd, NULL, NULL, "not a little-endian ELF64 file", why, whylen);
  uint64_t shoff = rd(eh + 40, 8), shentsize = rd(eh + 58, 2), shnum = rd(eh + 60, 2);
  if (shentsize < 64 || shnum == 0 || shoff > len || shnum * shentsize > len - shoff)
    return fail(e, fd, NULL, NULL, "no valid section headers", why, whylen);
  if (shnum * shentsize > SECTION_HEADERS_MAX)
    return fail(e, fd, NULL, NULL, "section headers beyond the size read", why, whylen);
  unsigned char *shdrs = read_at(fd, shoff, shnum * shentsize, &reason);
  if (!shdrs) return fail(e, fd, NULL, NULL, reason, why, whylen);
  for (uint64_t i = 0; i < shnum; i++) {
    const unsigned char *sh = shdrs + i * shentsize;
    if (rd(sh + 4, 4) != 2) continue;                  /* SHT_SYMTAB */
    uint64_t off = rd(sh + 24, 8), size = rd(sh + 32, 8), link = rd(sh + 40, 4);
    uint64_t ent = rd(sh + 56, 8);
    if (ent < 24 || off > len || size > len - off || link >= shnum)
      return fail(e, fd, shdrs, NULL, "malformed symbol table", why, whylen);
    const unsigned char *strh = shdrs + link * shentsize;
    uint64_t soff = rd(strh + 24, 8), ssize = rd(strh + 32, 8);
    if (soff > len || ssize > len - soff)
      return fail(e, fd, shdrs, NULL, "malformed symbol table", why, whylen);
    if (size + ssize > SYMBOLS_MAX) {
      char msg[96];
      snprintf(msg, sizeof msg, "symbol table larger than %d MB", ELF_SYMBOLS_MAX_MB);
      return fail(e, fd, shdrs, NULL, msg, why, whylen);
    }
    unsigned char *sym = read_at(fd, off, size, &reason);
    if (!sym) return fail(e, fd, shdrs, NULL, reason, why, whylen);
    unsigned char *str = read_at(fd, soff, ssize, &reason);
    if (!str) return fail(e, fd, shdrs, sym, reason, why, whylen);
    int rc = collect(e, sym, size, ent, str, ssize);
    free(str);
    if (rc) return fail(e, fd, shdrs, sym, "out of memory", why, whylen);
    free(sym);
    break;
  }
  free(shdrs);
  close(fd);
  if (!e->have_globals)
    return fail(e, -1, NULL, NULL, e->n ? "no caml_globals symbol"
                                        : "no symbol table with caml_globals (stripped?)", why, whylen);
  if (e->n) qsort(e->syms, e->n, sizeof *e->syms, by_value);
  return 0;
}

int elf_symbols_module(const elf_symbols *e, uint64_t anchor, uint64_t addr, char *out, size_t len)
{
  uint64_t v = addr - (anchor - e->globals);
  size_t lo = 0, hi = e->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (e->syms[mid].value < v) lo = mid + 1; else hi = mid;
  }
  if (lo >= e->n || e->syms[lo].value != v || !e->syms[lo].name) return 0;
  size_t j = 0;
  for (const char *p = e->syms[lo].name; *p && j + 1 < len; p++) {
    if (p[0] == '_' && p[1] == '_') { out[j++] = '.'; p++; }
    else out[j++] = *p;
  }
  out[j] = 0;
  return 1;
}

void elf_symbols_free(elf_symbols *e)
{
  for (size_t i = 0; i < e->n; i++) free(e->syms[i].name);
  free(e->syms);
  memset(e, 0, sizeof *e);
}

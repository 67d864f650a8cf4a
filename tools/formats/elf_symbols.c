/* elf_symbols.c: see elf_symbols.h.  The file is read whole (executables
   are megabytes); every offset and size read from it is bounds-checked. */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elf_symbols.h"

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

int elf_symbols_load(elf_symbols *e, const char *path, uint64_t anchor)
{
  memset(e, 0, sizeof *e);
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  unsigned char *d = NULL;
  size_t len = 0, cap = 0, k;
  do {
    if (len + 65536 > cap) {
      cap = cap ? 2 * cap : 1 << 20;
      unsigned char *nd = realloc(d, cap);
      if (!nd) { free(d); fclose(f); return -1; }
      d = nd;
    }
    k = fread(d + len, 1, cap - len, f);
    len += k;
  } while (k > 0);
  fclose(f);
  int ok = len >= 64 && memcmp(d, "\177ELF", 4) == 0 && d[4] == 2 && d[5] == 1;
  uint64_t shoff = ok ? rd(d + 40, 8) : 0;
  uint64_t shentsize = ok ? rd(d + 58, 2) : 0, shnum = ok ? rd(d + 60, 2) : 0;
  ok = ok && shentsize >= 64 && shoff < len && shnum * shentsize <= len - shoff;
  uint64_t globals = 0;
  int found = 0;
  for (uint64_t i = 0; ok && i < shnum; i++) {
    const unsigned char *sh = d + shoff + i * shentsize;
    if (rd(sh + 4, 4) != 2) continue;                  /* SHT_SYMTAB */
    uint64_t off = rd(sh + 24, 8), size = rd(sh + 32, 8), link = rd(sh + 40, 4);
    uint64_t ent = rd(sh + 56, 8);
    if (ent < 24 || off > len || size > len - off || link >= shnum) break;
    const unsigned char *str = d + shoff + link * shentsize;
    uint64_t soff = rd(str + 24, 8), ssize = rd(str + 32, 8);
    if (soff > len || ssize > len - soff) break;
    for (uint64_t s = 0; s + ent <= size; s += ent) {
      const unsigned char *sym = d + off + s;
      uint64_t name = rd(sym, 4), value = rd(sym + 8, 8);
      if (name >= ssize || value == 0) continue;
      const char *nm = (const char *)d + soff + name;
      size_t nl = strnlen(nm, ssize - name);
      if (nl == ssize - name || strncmp(nm, "caml", 4) != 0) continue;
      if (strcmp(nm, "caml_globals") == 0) { globals = value; found = 1; continue; }
      /* Module blocks: camlFoo, camlFoo__Bar (no lowercase-initial part
         after a "__", which would be a function or a constant). */
      if (nm[4] < 'A' || nm[4] > 'Z') continue;
      const char *sep = strstr(nm, "__");
      int module = 1;
      for (; sep; sep = strstr(sep + 2, "__"))
        if (!(sep[2] >= 'A' && sep[2] <= 'Z')) module = 0;
      if (!module || strchr(nm, '.') || strchr(nm, '$')) continue;
      void *ns = realloc(e->syms, (e->n + 1) * sizeof *e->syms);
      if (!ns) break;
      e->syms = ns;
      e->syms[e->n].value = value;
      e->syms[e->n].name = strdup(nm + 4);
      e->n++;
    }
    break;
  }
  free(d);
  if (!found) { elf_symbols_free(e); return -1; }
  e->bias = anchor - globals;
  if (e->n) qsort(e->syms, e->n, sizeof *e->syms, by_value);
  return 0;
}

int elf_symbols_module(const elf_symbols *e, uint64_t addr, char *out, size_t len)
{
  uint64_t v = addr - e->bias;
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

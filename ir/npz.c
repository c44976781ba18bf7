/*
 * npz.c: .npz archives, the format numpy.savez writes: a ZIP file whose members are .npy arrays,
 * stored without compression. portc writes them (`portc convert` puts a model's weights in one)
 * and reads members of them (parameters declared `file("W.npz", key="w")`). Compressed members
 * (numpy.savez_compressed) and ZIP64 archives (over 4 GiB) are refused by name.
 */
#include <stdlib.h>
#include <string.h>

#include "npz.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_END 0x06054b50u

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n) {
  static uint32_t table[256];
  if (!table[1])
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t c = i;
      for (int k = 0; k < 8; k++) c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
      table[i] = c;
    }
  crc = ~crc;
  for (size_t i = 0; i < n; i++) crc = table[(crc ^ p[i]) & 0xff] ^ (crc >> 8);
  return ~crc;
}

static uint32_t rd16(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static void wr16(unsigned char *p, uint32_t v) { p[0] = (unsigned char)v, p[1] = (unsigned char)(v >> 8); }
static void wr32(unsigned char *p, uint32_t v) { wr16(p, v & 0xffff), wr16(p + 2, v >> 16); }

/* ---- reading ---- */

/* the end-of-central-directory record: the directory's offset, size and entry count */
static portc_status find_directory(FILE *fp, const char *path, long size, uint32_t *off, uint32_t *len, uint32_t *count) {
  long tail = size < 22 + 65535 ? size : 22 + 65535;
  unsigned char *buf = malloc((size_t)tail);
  if (!buf) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
  portc_status st = err_set(PORTC_ERR_PARSE, "%s: not an .npz (ZIP) archive: no end-of-directory record", path);
  if (fseek(fp, size - tail, SEEK_SET) == 0 && fread(buf, 1, (size_t)tail, fp) == (size_t)tail)
    for (long i = tail - 22; i >= 0; i--) {
      if (rd32(buf + i) != SIG_END) continue;
      *count = rd16(buf + i + 10), *len = rd32(buf + i + 12), *off = rd32(buf + i + 16);
      if (*off == 0xffffffffu || *count == 0xffff) st = err_set(PORTC_ERR_PARSE, "%s: ZIP64 archives are not supported", path);
      else if ((uint64_t)*off + *len > (uint64_t)size) st = err_set(PORTC_ERR_PARSE, "%s: the directory lies past the end of the file", path);
      else st = PORTC_OK;
      break;
    }
  free(buf);
  return st;
}

/* the offset of the data of member name, after checking it is stored whole */
static portc_status find_member(FILE *fp, const char *path, long size, const char *name, long *data) {
  uint32_t off = 0, len = 0, count = 0;
  portc_status st = find_directory(fp, path, size, &off, &len, &count);
  if (st) return st;
  unsigned char *dir = malloc(len ? len : 1);
  if (!dir) return err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
  if (fseek(fp, off, SEEK_SET) != 0 || fread(dir, 1, len, fp) != len) {
    free(dir);
    return err_set(PORTC_ERR_PARSE, "%s: the directory is truncated", path);
  }
  size_t nlen = strlen(name);
  st = err_set(PORTC_ERR_INVALID, "%s: no array named '%.*s' in the archive", path, (int)(nlen - 4), name);
  uint32_t p = 0;
  for (uint32_t e = 0; e < count; e++) {
    if (p + 46 > len || rd32(dir + p) != SIG_CENTRAL) {
      st = err_set(PORTC_ERR_PARSE, "%s: directory entry %u is malformed", path, e);
      break;
    }
    uint32_t method = rd16(dir + p + 10), n = rd16(dir + p + 28), extra = rd16(dir + p + 30), comment = rd16(dir + p + 32);
    uint32_t local = rd32(dir + p + 42);
    if (p + 46 + n > len) {
      st = err_set(PORTC_ERR_PARSE, "%s: directory entry %u is malformed", path, e);
      break;
    }
    if (n == nlen && memcmp(dir + p + 46, name, n) == 0) {
      unsigned char h[30];
      if (method != 0)
        st = err_set(PORTC_ERR_PARSE, "%s: array '%s' is compressed (method %u); write it with numpy.savez, not savez_compressed", path,
                     name, method);
      else if (fseek(fp, local, SEEK_SET) != 0 || fread(h, 1, 30, fp) != 30 || rd32(h) != SIG_LOCAL)
        st = err_set(PORTC_ERR_PARSE, "%s: the entry of '%s' is malformed", path, name);
      else {
        *data = (long)local + 30 + (long)rd16(h + 26) + (long)rd16(h + 28);
        st = *data <= size ? PORTC_OK : err_set(PORTC_ERR_PARSE, "%s: the entry of '%s' is truncated", path, name);
      }
      break;
    }
    p += 46 + n + extra + comment;
  }
  free(dir);
  return st;
}

portc_status npz_read(FILE *fp, const char *path, const char *key, portc_tensor **out) {
  *out = NULL;
  char name[1024];
  if (snprintf(name, sizeof name, "%s.npy", key) >= (int)sizeof name) return err_set(PORTC_ERR_INVALID, "%s: member name too long", path);
  long size = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1, data = 0;
  portc_status st = size < 0 ? err_set(PORTC_ERR_IO, "%s: cannot seek: %m", path) : find_member(fp, path, size, name, &data);
  if (!st) {
    char what[1100];
    snprintf(what, sizeof what, "%s:%s", path, key);
    st = fseek(fp, data, SEEK_SET) == 0 ? npy_read(fp, what, out) : err_set(PORTC_ERR_IO, "%s: cannot seek: %m", path);
  }
  return st;
}

portc_status npz_load(const char *path, const char *key, portc_tensor **out) {
  *out = NULL;
  char why[160];
  FILE *fp = file_open_read(path, why, sizeof why);
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot open: %s", path, why);
  portc_status st = npz_read(fp, path, key, out);
  fclose(fp);
  return st;
}

/* ---- writing ---- */

typedef struct member {
  char *name;
  uint32_t crc, size, offset;
} member;

struct npz_writer {
  FILE *fp;
  char *path;
  member *m;
  int n, cap;
  uint64_t at;
  bool failed;
};

portc_status npz_create(const char *path, npz_writer **out) {
  *out = NULL;
  npz_writer *w = calloc(1, sizeof *w);
  if (!w || !(w->path = strdup(path))) {
    free(w);
    return err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
  }
  if (!(w->fp = fopen(path, "wb"))) {
    portc_status st = err_set(PORTC_ERR_IO, "%s: cannot create: %m", path);
    free(w->path);
    free(w);
    return st;
  }
  *out = w;
  return PORTC_OK;
}

static portc_status fail(npz_writer *w, portc_status st) {
  w->failed = true;
  return st;
}

portc_status npz_add(npz_writer *w, const char *key, const portc_tensor *t) {
  if (w->failed) return err_set(PORTC_ERR_IO, "%s: an earlier write failed", w->path);
  char *buf = NULL;
  size_t size = 0;
  FILE *mem = open_memstream(&buf, &size);
  bool ok = mem && npy_write(mem, t);
  if (mem && fclose(mem) != 0) ok = false;
  if (!ok) {
    free(buf);
    return fail(w, err_set(PORTC_ERR_NOMEM, "%s: out of memory writing '%s'", w->path, key));
  }
  size_t nlen = strlen(key) + 4;
  if (w->at + 30 + nlen + size > 0xfffffffeu) {
    free(buf);
    return fail(w, err_set(PORTC_ERR_INVALID, "%s: the weights pass 4 GiB, which needs ZIP64 (not supported)", w->path));
  }
  if (w->n == w->cap) {
    int cap = w->cap ? 2 * w->cap : 64;
    member *m = realloc(w->m, sizeof *m * (size_t)cap);
    if (!m) {
      free(buf);
      return fail(w, err_set(PORTC_ERR_NOMEM, "%s: out of memory", w->path));
    }
    w->m = m, w->cap = cap;
  }
  member *m = &w->m[w->n];
  if (!(m->name = malloc(nlen + 1))) {
    free(buf);
    return fail(w, err_set(PORTC_ERR_NOMEM, "%s: out of memory", w->path));
  }
  snprintf(m->name, nlen + 1, "%s.npy", key);
  m->crc = crc32_update(0, (const unsigned char *)buf, size);
  m->size = (uint32_t)size;
  m->offset = (uint32_t)w->at;
  w->n++;
  unsigned char h[30] = {0};
  wr32(h, SIG_LOCAL), wr16(h + 4, 20), wr16(h + 12, 0x21), wr32(h + 14, m->crc), wr32(h + 18, m->size), wr32(h + 22, m->size);
  wr16(h + 26, (uint32_t)nlen);
  ok = fwrite(h, 1, 30, w->fp) == 30 && fwrite(m->name, 1, nlen, w->fp) == nlen && fwrite(buf, 1, size, w->fp) == size;
  free(buf);
  w->at += 30 + nlen + size;
  return ok ? PORTC_OK : fail(w, err_set(PORTC_ERR_IO, "%s: write failed: %m", w->path));
}

portc_status npz_close(npz_writer *w) {
  bool ok = !w->failed;
  uint64_t start = w->at, len = 0;
  for (int i = 0; i < w->n && ok; i++) {
    unsigned char h[46] = {0};
    size_t nlen = strlen(w->m[i].name);
    wr32(h, SIG_CENTRAL), wr16(h + 4, 20), wr16(h + 6, 20), wr16(h + 14, 0x21), wr32(h + 16, w->m[i].crc);
    wr32(h + 20, w->m[i].size), wr32(h + 24, w->m[i].size), wr16(h + 28, (uint32_t)nlen), wr32(h + 42, w->m[i].offset);
    ok = fwrite(h, 1, 46, w->fp) == 46 && fwrite(w->m[i].name, 1, nlen, w->fp) == nlen;
    len += 46 + nlen;
  }
  ok = ok && w->n < 0xffff && start + len < 0xffffffffu;
  unsigned char e[22] = {0};
  wr32(e, SIG_END), wr16(e + 8, (uint32_t)w->n), wr16(e + 10, (uint32_t)w->n), wr32(e + 12, (uint32_t)len), wr32(e + 16, (uint32_t)start);
  ok = ok && fwrite(e, 1, 22, w->fp) == 22;
  if (fclose(w->fp) != 0) ok = false;
  portc_status st = ok ? PORTC_OK : err_set(PORTC_ERR_IO, "%s: writing the archive failed", w->path);
  if (!ok && !w->failed) remove(w->path);
  for (int i = 0; i < w->n; i++) free(w->m[i].name);
  free(w->m);
  free(w->path);
  free(w);
  return st;
}

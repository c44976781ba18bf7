/*
 * npy.c: reading and writing NumPy .npy files (format versions 1.0 to 3.0), the tensor file
 * format of the portc command and of parameters loaded from files. Only C-order little-endian
 * arrays of the dtypes portc has are accepted; anything else is an error that says what was found.
 * NumPy has no bf16, so bf16 tensors are written as f32 (exactly).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "graph.h"
#include "npz.h"

static const struct { const char *descr; portc_dtype t; } descrs[] = {
    {"<f4", PORTC_F32}, {"<f2", PORTC_F16}, {"<f8", PORTC_F64}, {"<i4", PORTC_I32},
    {"<i8", PORTC_I64}, {"|b1", PORTC_BOOL}, {"|u1", PORTC_BOOL},
};

/* the value after 'key': in the header dict, or NULL */
static const char *dict_value(const char *h, const char *key) {
  char pat[32];
  snprintf(pat, sizeof pat, "'%s'", key);
  const char *p = strstr(h, pat);
  if (!p) return NULL;
  p += strlen(pat);
  while (*p == ' ') p++;
  if (*p != ':') return NULL;
  p++;
  while (*p == ' ') p++;
  return p;
}

static portc_status parse_header(const char *path, const char *h, portc_dtype *t, int *rank, int64_t *shape) {
  const char *d = dict_value(h, "descr"), *f = dict_value(h, "fortran_order"), *s = dict_value(h, "shape");
  if (!d || !f || !s) return err_set(PORTC_ERR_PARSE, "%s: the .npy header lacks descr, fortran_order or shape", path);
  bool found = false;
  for (unsigned i = 0; i < sizeof descrs / sizeof *descrs && !found; i++)
    if (d[0] == '\'' && strncmp(d + 1, descrs[i].descr, 3) == 0 && d[4] == '\'') *t = descrs[i].t, found = true;
  if (!found) {
    char got[16] = "";
    sscanf(d, "'%15[^']", got);
    return err_set(PORTC_ERR_DTYPE, "%s: dtype '%s' is not supported (f4, f2, f8, i4, i8 and b1, little-endian)", path, got);
  }
  if (strncmp(f, "False", 5) != 0) return err_set(PORTC_ERR_PARSE, "%s: Fortran-order arrays are not supported; save with order='C'", path);
  if (*s != '(') return err_set(PORTC_ERR_PARSE, "%s: malformed shape in the .npy header", path);
  s++;
  *rank = 0;
  while (*s == ' ') s++;
  while (*s != ')') {
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v < 0) return err_set(PORTC_ERR_PARSE, "%s: malformed shape in the .npy header", path);
    if (*rank == PORTC_MAX_RANK) return err_set(PORTC_ERR_SHAPE, "%s: rank is more than %d", path, PORTC_MAX_RANK);
    shape[(*rank)++] = v;
    s = end;
    while (*s == ' ' || *s == ',') s++;
    if (!*s) return err_set(PORTC_ERR_PARSE, "%s: malformed shape in the .npy header", path);
  }
  return PORTC_OK;
}

portc_status npy_read(FILE *fp, const char *path, portc_tensor **out) {
  *out = NULL;
  unsigned char pre[10];
  char *header = NULL;
  portc_status st = PORTC_OK;
  if (fread(pre, 1, 8, fp) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    st = err_set(PORTC_ERR_PARSE, "%s: not a .npy file (bad magic)", path);
    goto done;
  }
  size_t hlen;
  if (pre[6] == 1) {
    if (fread(pre + 8, 1, 2, fp) != 2) goto truncated;
    hlen = pre[8] | (size_t)pre[9] << 8;
  } else if (pre[6] == 2 || pre[6] == 3) {
    unsigned char b[4];
    if (fread(b, 1, 4, fp) != 4) goto truncated;
    hlen = b[0] | (size_t)b[1] << 8 | (size_t)b[2] << 16 | (size_t)b[3] << 24;
    if (hlen > (1u << 24)) {
      st = err_set(PORTC_ERR_PARSE, "%s: .npy header of %zu bytes is implausible", path, hlen);
      goto done;
    }
  } else {
    st = err_set(PORTC_ERR_PARSE, "%s: .npy format version %d is not supported", path, pre[6]);
    goto done;
  }
  if (!(header = malloc(hlen + 1))) {
    st = err_set(PORTC_ERR_NOMEM, "%s: out of memory", path);
    goto done;
  }
  if (fread(header, 1, hlen, fp) != hlen) goto truncated;
  header[hlen] = 0;
  portc_dtype t = PORTC_F32;
  int rank = 0;
  int64_t shape[PORTC_MAX_RANK];
  if ((st = parse_header(path, header, &t, &rank, shape))) goto done;
  portc_tensor *x = portc_tensor_new(t, rank, shape);
  if (!x) {
    st = err_set(PORTC_ERR_NOMEM, "%s: %s", path, portc_last_error());
    goto done;
  }
  size_t bytes = (size_t)portc_tensor_numel(x) * portc_dtype_size(t);
  if (fread(x->data, 1, bytes, fp) != bytes) {
    portc_tensor_free(x);
    goto truncated;
  }
  if (t == PORTC_BOOL)
    for (size_t i = 0; i < bytes; i++) ((uint8_t *)x->data)[i] = ((uint8_t *)x->data)[i] != 0;
  *out = x;
  goto done;
truncated:
  st = err_set(PORTC_ERR_PARSE, "%s: the file is truncated", path);
done:
  free(header);
  return st;
}

portc_status portc_tensor_load_npy(const char *path, portc_tensor **out) {
  *out = NULL;
  FILE *fp = fopen(path, "rb");
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot open: %m", path);
  portc_status st = npy_read(fp, path, out);
  fclose(fp);
  return st;
}

bool npy_write(FILE *fp, const portc_tensor *t) {
  const char *descr = NULL;
  portc_dtype as = t->dtype == PORTC_BF16 ? PORTC_F32 : t->dtype;
  for (unsigned i = 0; i < sizeof descrs / sizeof *descrs && !descr; i++)
    if (descrs[i].t == as) descr = descrs[i].descr;
  char dict[512];
  int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->rank; i++) n += snprintf(dict + n, sizeof dict - (size_t)n, "%lld,%s", (long long)t->shape[i], i + 1 < t->rank ? " " : "");
  n += snprintf(dict + n, sizeof dict - (size_t)n, "), }");
  int total = 10 + n + 1, pad = (64 - total % 64) % 64; /* header ends in \n, data 64-aligned */
  unsigned hlen = (unsigned)(n + pad + 1);
  unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
  bool ok = fwrite(pre, 1, 10, fp) == 10 && fwrite(dict, 1, (size_t)n, fp) == (size_t)n;
  for (int i = 0; i < pad && ok; i++) ok = fputc(' ', fp) != EOF;
  ok = ok && fputc('\n', fp) != EOF;
  int64_t numel = portc_tensor_numel(t);
  if (ok && t->dtype == PORTC_BF16) {
    for (int64_t i = 0; i < numel && ok; i++) {
      float f = (float)portc_tensor_get(t, i);
      ok = fwrite(&f, 4, 1, fp) == 1;
    }
  } else if (ok) {
    size_t bytes = (size_t)numel * portc_dtype_size(t->dtype);
    ok = fwrite(t->data, 1, bytes, fp) == bytes;
  }
  return ok;
}

portc_status portc_tensor_save_npy(const portc_tensor *t, const char *path) {
  if (!t || !path) return err_set(PORTC_ERR_INVALID, "save_npy: NULL %s", t ? "path" : "tensor");
  FILE *fp = fopen(path, "wb");
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot create: %m", path);
  bool ok = npy_write(fp, t);
  if (fclose(fp) != 0) ok = false;
  if (!ok) return err_set(PORTC_ERR_IO, "%s: write failed: %m", path);
  return PORTC_OK;
}

/*
 * npy.c: reading and writing NumPy .npy files (format versions 1.0 to 3.0), the tensor file
 * format of the portc command and of parameters loaded from files. Only C-order little-endian
 * arrays of the dtypes portc has are accepted; anything else is an error that says what was found.
 * NumPy has no bf16, so bf16 tensors are written as f32 (exactly).
 */
#include <errno.h>
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

/* The header is a Python dict literal, read as one, as numpy.load does: exactly the keys descr
 * (a string), fortran_order (True or False) and shape (a tuple of integers), each once; a key
 * named inside another key's string, a repeated key or one more key is an error. */
typedef struct header_reader {
  const char *p, *path;
} header_reader;

static void skip_space(header_reader *r) {
  while (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r') r->p++;
}

/* a quoted string (no escapes: numpy writes none in these values) into out */
static bool read_string(header_reader *r, char *out, size_t len) {
  char q = *r->p;
  if (q != '\'' && q != '"') return false;
  const char *end = strchr(r->p + 1, q);
  if (!end || (size_t)(end - r->p - 1) >= len || memchr(r->p + 1, '\\', (size_t)(end - r->p - 1))) return false;
  snprintf(out, len, "%.*s", (int)(end - r->p - 1), r->p + 1);
  r->p = end + 1;
  return true;
}

static portc_status read_shape(header_reader *r, int *rank, int64_t *shape) {
  if (*r->p != '(') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: shape is not a tuple", r->path);
  r->p++;
  *rank = 0;
  for (skip_space(r); *r->p != ')'; skip_space(r)) {
    if (*r->p < '0' || *r->p > '9') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: a dimension is not a non-negative integer", r->path);
    char *end;
    errno = 0;
    long long v = strtoll(r->p, &end, 10);
    if (errno == ERANGE || v > ((int64_t)1 << 48)) return err_set(PORTC_ERR_SHAPE, "%s: .npy dimension %.20s is too large", r->path, r->p);
    if (*rank == PORTC_MAX_RANK) return err_set(PORTC_ERR_SHAPE, "%s: rank is more than %d", r->path, PORTC_MAX_RANK);
    shape[(*rank)++] = v;
    r->p = end;
    skip_space(r);
    if (*r->p == ',') r->p++;
    else if (*r->p != ')') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: shape tuple", r->path);
  }
  r->p++;
  return PORTC_OK;
}

static portc_status parse_header(const char *path, const char *h, portc_dtype *t, int *rank, int64_t *shape) {
  header_reader r = {h, path};
  char key[32], descr[32] = "";
  bool seen[3] = {false, false, false};
  portc_status st = PORTC_OK;
  skip_space(&r);
  if (*r.p++ != '{') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: not a dict", path);
  for (skip_space(&r); *r.p != '}'; skip_space(&r)) {
    if (!read_string(&r, key, sizeof key)) return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: a key is not a string", path);
    int k = strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2 : -1;
    if (k < 0) return err_set(PORTC_ERR_PARSE, "%s: the .npy header has the key '%s' (only descr, fortran_order and shape)", path, key);
    if (seen[k]) return err_set(PORTC_ERR_PARSE, "%s: the .npy header has the key '%s' twice", path, key);
    seen[k] = true;
    skip_space(&r);
    if (*r.p++ != ':') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: no ':' after '%s'", path, key);
    skip_space(&r);
    if (k == 0 && !read_string(&r, descr, sizeof descr)) return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: descr is not a string", path);
    if (k == 1) {
      if (strncmp(r.p, "True", 4) == 0) return err_set(PORTC_ERR_PARSE, "%s: Fortran-order arrays are not supported; save with order='C'", path);
      if (strncmp(r.p, "False", 5) != 0) return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: fortran_order is not True or False", path);
      r.p += 5;
    }
    if (k == 2 && (st = read_shape(&r, rank, shape))) return st;
    skip_space(&r);
    if (*r.p == ',') r.p++;
    else if (*r.p != '}') return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header after '%s'", path, key);
  }
  r.p++;
  skip_space(&r);
  if (*r.p) return err_set(PORTC_ERR_PARSE, "%s: malformed .npy header: text after the dict", path);
  if (!seen[0] || !seen[1] || !seen[2]) return err_set(PORTC_ERR_PARSE, "%s: the .npy header lacks descr, fortran_order or shape", path);
  for (unsigned i = 0; i < sizeof descrs / sizeof *descrs; i++)
    if (strcmp(descr, descrs[i].descr) == 0) {
      *t = descrs[i].t;
      return PORTC_OK;
    }
  return err_set(PORTC_ERR_DTYPE, "%s: dtype '%s' is not supported (f4, f2, f8, i4, i8 and b1, little-endian)", path, descr);
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
  /* the data the header declares must be there before it is allocated: a 100-byte file that
   * declares 8 GiB is truncated, not an allocation of 8 GiB */
  long at = ftell(fp), end = -1;
  if (at >= 0 && fseek(fp, 0, SEEK_END) == 0) end = ftell(fp);
  if (at >= 0 && fseek(fp, at, SEEK_SET) != 0) end = -1;
  if (end >= at && at >= 0) {
    double want = portc_dtype_size(t);
    for (int d = 0; d < rank; d++) want *= (double)shape[d];
    if (want > (double)(end - at)) {
      st = err_set(PORTC_ERR_PARSE, "%s: the file is truncated: the header declares %.0f bytes of data, %ld follow it", path, want, end - at);
      goto done;
    }
  }
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
  char why[160];
  FILE *fp = file_open_read(path, why, sizeof why);
  if (!fp) return err_set(PORTC_ERR_IO, "%s: cannot open: %s", path, why);
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

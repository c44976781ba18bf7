/*
 * model.c: ONNX tensors as values the importer knows: element types, initializers and Constant
 * values with their data inline (raw_data or the typed fields) or in an external data file beside
 * the model. Every count, size and offset is checked against what the tensor declares before a
 * byte is read, so a malformed file is an error that names the tensor.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dtype.h"
#include "onnx_import.h"

#define MAX_TENSOR_ELEMENTS ((int64_t)1 << 34)
#define MAX_KNOWN_INTS ((int64_t)1 << 24)

typedef enum {
  T_FLOAT = 1, T_UINT8 = 2, T_INT8 = 3, T_UINT16 = 4, T_INT16 = 5, T_INT32 = 6, T_INT64 = 7, T_STRING = 8,
  T_BOOL = 9, T_FLOAT16 = 10, T_DOUBLE = 11, T_UINT32 = 12, T_UINT64 = 13, T_BFLOAT16 = 16,
} onnx_type;

static const struct { int32_t t; const char *name; int size; portc_dtype as; } types[] = {
    {T_FLOAT, "float", 4, PORTC_F32},     {T_UINT8, "uint8", 1, PORTC_I64},    {T_INT8, "int8", 1, PORTC_I64},
    {T_UINT16, "uint16", 2, PORTC_I64},   {T_INT16, "int16", 2, PORTC_I64},    {T_INT32, "int32", 4, PORTC_I32},
    {T_INT64, "int64", 8, PORTC_I64},     {T_STRING, "string", 0, PORTC_F32},  {T_BOOL, "bool", 1, PORTC_BOOL},
    {T_FLOAT16, "float16", 2, PORTC_F16}, {T_DOUBLE, "double", 8, PORTC_F64},  {T_UINT32, "uint32", 4, PORTC_I64},
    {T_UINT64, "uint64", 8, PORTC_I64},   {T_BFLOAT16, "bfloat16", 2, PORTC_BF16},
};

static int type_index(int32_t t) {
  for (int i = 0; i < (int)(sizeof types / sizeof *types); i++)
    if (types[i].t == t) return i;
  return -1;
}

bool onnx_dtype(int32_t t, portc_dtype *out) {
  if (t != T_FLOAT && t != T_FLOAT16 && t != T_BFLOAT16 && t != T_INT32 && t != T_INT64 && t != T_BOOL) return false;
  *out = types[type_index(t)].as;
  return true;
}

const char *onnx_dtype_name(int32_t t) {
  int i = type_index(t);
  return i < 0 ? "unknown" : types[i].name;
}

/* bytes of an external data file: location relative to the model's folder, no way out of it */
static portc_status external_bytes(imp *c, const Onnx__TensorProto *t, size_t want, unsigned char **out) {
  const char *where = NULL;
  long long offset = 0, length = -1;
  for (size_t i = 0; i < t->n_external_data; i++) {
    const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
    if (!k || !v) continue;
    if (!strcmp(k, "location")) where = v;
    else if (!strcmp(k, "offset")) offset = strtoll(v, NULL, 10);
    else if (!strcmp(k, "length")) length = strtoll(v, NULL, 10);
  }
  const char *name = t->name ? t->name : "?";
  if (!c->basedir) return fail(c, PORTC_ERR_INVALID, "tensor '%s' keeps its data in an external file, which needs the model loaded from a file", name);
  if (!where || !*where) return fail(c, PORTC_ERR_PARSE, "tensor '%s' has external data without a location", name);
  if (where[0] == '/' || strstr(where, "..")) return fail(c, PORTC_ERR_INVALID, "tensor '%s': external data location '%s' leaves the model's folder", name, where);
  if (offset < 0 || (length >= 0 && (size_t)length != want))
    return fail(c, PORTC_ERR_PARSE, "tensor '%s': external data offset %lld / length %lld do not fit its %zu bytes", name, offset, length, want);
  char path[4096], real_dir[PATH_MAX], real[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s", c->basedir, where);
  if (!realpath(c->basedir, real_dir) || !realpath(path, real))
    return fail(c, PORTC_ERR_IO, "tensor '%s': cannot open external data %s: %m", name, path);
  size_t nd = strlen(real_dir);
  if (strncmp(real, real_dir, nd) != 0 || real[nd] != '/') /* a link that leads out */
    return fail(c, PORTC_ERR_INVALID, "tensor '%s': external data location '%s' leaves the model's folder (it is %s)", name, where, real);
  int fd = open(real, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  struct stat st_file;
  if (fd >= 0 && (fstat(fd, &st_file) != 0 || !S_ISREG(st_file.st_mode))) {
    close(fd);
    return fail(c, PORTC_ERR_INVALID, "tensor '%s': external data %s is not a regular file", name, path);
  }
  FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!fp) {
    if (fd >= 0) close(fd);
    return fail(c, PORTC_ERR_IO, "tensor '%s': cannot open external data %s: %m", name, path);
  }
  unsigned char *buf = malloc(want ? want : 1);
  portc_status st = PORTC_OK;
  if (!buf) st = fail(c, PORTC_ERR_NOMEM, "tensor '%s': out of memory", name);
  else if (fseek(fp, (long)offset, SEEK_SET) != 0 || fread(buf, 1, want, fp) != want)
    st = fail(c, PORTC_ERR_PARSE, "tensor '%s': external data %s ends before offset %lld + %zu bytes", name, path, offset, want);
  fclose(fp);
  if (st) free(buf);
  else *out = buf;
  return st;
}

static int64_t raw_int(const unsigned char *p, int32_t type) {
  switch (type) {
  case T_UINT8: case T_BOOL: return p[0];
  case T_INT8: return (int8_t)p[0];
  case T_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
  case T_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
  case T_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
  case T_UINT32: { uint32_t v; memcpy(&v, p, 4); return v; }
  default: { int64_t v; memcpy(&v, p, 8); return v; }
  }
}

static double raw_float(const unsigned char *p, int32_t type) {
  if (type == T_FLOAT) { float f; memcpy(&f, p, 4); return f; }
  if (type == T_DOUBLE) { double d; memcpy(&d, p, 8); return d; }
  uint16_t h;
  memcpy(&h, p, 2);
  return type == T_FLOAT16 ? f16_value(h) : bf16_value(h);
}

/* element k from the typed fields (not raw_data) */
static bool field_value(const Onnx__TensorProto *t, int64_t k, double *f, int64_t *i) {
  switch (t->data_type) {
  case T_FLOAT: *f = t->float_data[k]; return true;
  case T_DOUBLE: *f = t->double_data[k]; return true;
  case T_FLOAT16: *f = f16_value((uint16_t)t->int32_data[k]); return true;
  case T_BFLOAT16: *f = bf16_value((uint16_t)t->int32_data[k]); return true;
  case T_INT64: *i = t->int64_data[k]; return true;
  case T_UINT32: case T_UINT64: *i = (int64_t)t->uint64_data[k]; return true;
  default: *i = t->int32_data[k]; return true;
  }
}

static size_t field_count(const Onnx__TensorProto *t) {
  switch (t->data_type) {
  case T_FLOAT: return t->n_float_data;
  case T_DOUBLE: return t->n_double_data;
  case T_INT64: return t->n_int64_data;
  case T_UINT32: case T_UINT64: return t->n_uint64_data;
  default: return t->n_int32_data;
  }
}

portc_status tensor_value(imp *c, const Onnx__TensorProto *t, oval *v) {
  const char *name = t->name && *t->name ? t->name : v->name;
  int ti = type_index(t->data_type);
  if (ti < 0 || t->data_type == T_STRING)
    return fail(c, PORTC_ERR_DTYPE, "tensor '%s' has element type %s (%d), which portc does not take", name, onnx_dtype_name(t->data_type), (int)t->data_type);
  if (t->n_dims > PORTC_MAX_RANK) return fail(c, PORTC_ERR_SHAPE, "tensor '%s' has rank %zu, more than %d", name, t->n_dims, PORTC_MAX_RANK);
  if (t->segment) return fail(c, PORTC_ERR_INVALID, "tensor '%s' is segmented, which portc does not read", name);
  int64_t numel = 1;
  v->rank = (int)t->n_dims;
  for (size_t d = 0; d < t->n_dims; d++) {
    if (t->dims[d] < 0) return fail(c, PORTC_ERR_SHAPE, "tensor '%s' has negative dimension %lld", name, (long long)t->dims[d]);
    if (t->dims[d] && numel > MAX_TENSOR_ELEMENTS / t->dims[d])
      return fail(c, PORTC_ERR_SHAPE, "tensor '%s' has more than 2^34 elements", name);
    numel *= t->dims[d];
    v->shape[d] = t->dims[d];
  }
  size_t esize = (size_t)types[ti].size, want = (size_t)numel * esize;
  const unsigned char *raw = NULL;
  unsigned char *owned = NULL;
  portc_status st;
  if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    if ((st = external_bytes(c, t, want, &owned))) return st;
    raw = owned;
  } else if (t->has_raw_data) {
    if (t->raw_data.len != want)
      return fail(c, PORTC_ERR_PARSE, "tensor '%s' declares %lld elements of %s (%zu bytes) but holds %zu bytes", name, (long long)numel,
                  types[ti].name, want, t->raw_data.len);
    raw = t->raw_data.data;
  } else if (field_count(t) != (size_t)numel) {
    return fail(c, PORTC_ERR_PARSE, "tensor '%s' declares %lld elements but holds %zu", name, (long long)numel, field_count(t));
  }
  v->known = true;
  v->dt = types[ti].as;
  bool floating = t->data_type == T_FLOAT || t->data_type == T_FLOAT16 || t->data_type == T_BFLOAT16 || t->data_type == T_DOUBLE;
  if (floating) {
    portc_tensor *x = portc_tensor_new(v->dt, v->rank, v->shape);
    if (!x || !(v->f = pdata_new(x))) {
      free(owned);
      return fail(c, PORTC_ERR_NOMEM, "tensor '%s': out of memory", name);
    }
    if (raw && esize == portc_dtype_size(v->dt)) {
      if (want) memcpy(x->data, raw, want);
    } else {
      for (int64_t k = 0; k < numel; k++) {
        double f = 0;
        int64_t i;
        if (raw) f = raw_float(raw + (size_t)k * esize, t->data_type);
        else field_value(t, k, &f, &i);
        portc_tensor_set(x, k, f);
      }
    }
  } else {
    if (numel > MAX_KNOWN_INTS) {
      free(owned);
      return fail(c, PORTC_ERR_SHAPE, "integer tensor '%s' has %lld elements; portc takes integer constants of up to 2^24", name, (long long)numel);
    }
    if (!(v->i = malloc(sizeof(sval) * (size_t)(numel ? numel : 1)))) {
      free(owned);
      return fail(c, PORTC_ERR_NOMEM, "tensor '%s': out of memory", name);
    }
    for (int64_t k = 0; k < numel; k++) {
      double f;
      int64_t i = 0;
      if (raw) i = raw_int(raw + (size_t)k * esize, t->data_type);
      else field_value(t, k, &f, &i);
      if (t->data_type == T_BOOL) i = i != 0;
      v->i[k] = (sval){i, -1, false};
    }
  }
  free(owned);
  return PORTC_OK;
}

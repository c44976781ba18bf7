// test_npy.cpp: .npy files in and out: every dtype round-trips, and broken files give errors
// that name the file and the problem.
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

#include "helpers.h"

static std::string tmp(const std::string &name) { return testing::TempDir() + "/" + name; }

TEST(Npy, EveryDtypeRoundTrips) {
  for (portc_dtype t : {PORTC_F32, PORTC_F16, PORTC_I32, PORTC_I64, PORTC_BOOL, PORTC_F64}) {
    int64_t shape[] = {2, 3};
    portc_tensor *a = portc_tensor_new(t, 2, shape);
    for (int i = 0; i < 6; i++) portc_tensor_set(a, i, t == PORTC_BOOL ? i % 2 : i * 1.5 - 2);
    std::string path = tmp(std::string("rt_") + portc_dtype_name(t) + ".npy");
    ASSERT_EQ(portc_tensor_save_npy(a, path.c_str()), PORTC_OK) << portc_last_error();
    portc_tensor *b = nullptr;
    ASSERT_EQ(portc_tensor_load_npy(path.c_str(), &b), PORTC_OK) << portc_last_error();
    EXPECT_EQ(b->dtype, t);
    EXPECT_EQ(b->rank, 2);
    EXPECT_EQ(b->shape[1], 3);
    for (int i = 0; i < 6; i++) EXPECT_EQ(portc_tensor_get(b, i), portc_tensor_get(a, i));
    portc_tensor_free(a);
    portc_tensor_free(b);
  }
}

TEST(Npy, Bf16IsWrittenAsF32AndScalarsWork) {
  portc_tensor *a = portc_tensor_new(PORTC_BF16, 0, nullptr);
  portc_tensor_set(a, 0, 3.14159);
  ASSERT_EQ(portc_tensor_save_npy(a, tmp("bf.npy").c_str()), PORTC_OK);
  portc_tensor *b = nullptr;
  ASSERT_EQ(portc_tensor_load_npy(tmp("bf.npy").c_str(), &b), PORTC_OK);
  EXPECT_EQ(b->dtype, PORTC_F32);
  EXPECT_EQ(b->rank, 0);
  EXPECT_EQ(portc_tensor_get(b, 0), 3.140625);
  portc_tensor_free(a);
  portc_tensor_free(b);
}

static void write_file(const std::string &path, const std::string &bytes) {
  std::ofstream f(path, std::ios::binary);
  f << bytes;
}

static std::string header(const std::string &dict) {
  std::string h = dict;
  while ((10 + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string pre = std::string("\x93NUMPY\x01\x00", 8);
  pre += (char)(h.size() & 0xff);
  pre += (char)(h.size() >> 8);
  return pre + h;
}

TEST(Npy, BrokenFilesGiveClearErrors) {
  struct {
    const char *name;
    std::string bytes;
    portc_status st;
    const char *want;
  } cases[] = {
      {"magic.npy", "not numpy at all", PORTC_ERR_PARSE, "not a .npy file (bad magic)"},
      {"short.npy", std::string("\x93NUMPY\x01", 7), PORTC_ERR_PARSE, "not a .npy file"},
      {"trunc.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }") + std::string(8, '\0'), PORTC_ERR_PARSE, "the file is truncated"},
      {"dtype.npy", header("{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }") + std::string(4, '\0'), PORTC_ERR_DTYPE, "dtype '>f4' is not supported"},
      {"fortran.npy", header("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }") + std::string(4, '\0'), PORTC_ERR_PARSE, "Fortran-order arrays are not supported"},
      {"shape.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }"), PORTC_ERR_PARSE, "malformed .npy header: a dimension is not a non-negative integer"},
      // the header is read as a dict: a key inside another key's string, a repeated key, one
      // more key, or text after the dict is an error (each was accepted by a substring search)
      {"inside.npy", header("{'descr': '<f4', 'fortran_order': False, 'x': \"'shape': (1,)\"}") + std::string(4, '\0'), PORTC_ERR_PARSE, "has the key 'x'"},
      {"hidden.npy", header("{'descr': \"<f4', 'shape': (1,), 'y': '\", 'fortran_order': False, 'shape': (2,)}") + std::string(8, '\0'), PORTC_ERR_DTYPE, "is not supported"},
      {"twice.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'shape': (2,)}") + std::string(8, '\0'), PORTC_ERR_PARSE, "the key 'shape' twice"},
      {"after.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x") + std::string(4, '\0'), PORTC_ERR_PARSE, "text after the dict"},
      {"huge.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"), PORTC_ERR_SHAPE, "is too large"},
      {"nokey.npy", header("{'descr': '<f4'}"), PORTC_ERR_PARSE, "lacks descr, fortran_order or shape"},
      {"version.npy", std::string("\x93NUMPY\x09\x00\x00\x00", 10), PORTC_ERR_PARSE, "format version 9 is not supported"},
  };
  for (auto &c : cases) {
    std::string path = tmp(c.name);
    write_file(path, c.bytes);
    portc_tensor *t = reinterpret_cast<portc_tensor *>(1);
    EXPECT_EQ(portc_tensor_load_npy(path.c_str(), &t), c.st) << c.name << ": " << portc_last_error();
    EXPECT_EQ(t, nullptr);
    std::string err = portc_last_error();
    EXPECT_NE(err.find(path), std::string::npos) << err;
    EXPECT_NE(err.find(c.want), std::string::npos) << c.name << ": " << err;
  }
  portc_tensor *t = nullptr;
  EXPECT_EQ(portc_tensor_load_npy(tmp("none.npy").c_str(), &t), PORTC_ERR_IO);
  // a FIFO is refused at once, not waited on (defect 12); so is a folder
  std::string fifo = tmp("fifo.npy");
  unlink(fifo.c_str());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(portc_tensor_load_npy(fifo.c_str(), &t), PORTC_ERR_IO);
  EXPECT_NE(std::string(portc_last_error()).find("not a regular file"), std::string::npos) << portc_last_error();
  EXPECT_EQ(portc_tensor_load_npy(testing::TempDir().c_str(), &t), PORTC_ERR_IO);
  EXPECT_NE(std::string(portc_last_error()).find("it is a folder"), std::string::npos) << portc_last_error();
  unlink(fifo.c_str());
  int64_t s[] = {1};
  portc_tensor *a = portc_tensor_new(PORTC_F32, 1, s);
  EXPECT_EQ(portc_tensor_save_npy(a, "/nonexistent-dir/x.npy"), PORTC_ERR_IO);
  portc_tensor_free(a);
}

// i64 data bound to an i32 input must fit: 2^31 is an error that names the element, not a wrap
// (defect 13); values that fit are converted
TEST(Npy, I64BoundToI32MustFit) {
  Graph g = parse("graph a\ninput x: i32[3]\ny = add(x, x)\noutput y\n");
  ASSERT_TRUE(g);
  int64_t shape[] = {3};
  portc_tensor *t = portc_tensor_new(PORTC_I64, 1, shape);
  portc_tensor_set(t, 0, 1);
  portc_tensor_set(t, 1, 2147483648.0);
  portc_tensor_set(t, 2, -5);
  portc_bindings *b = portc_bindings_new(g.get());
  EXPECT_EQ(portc_bindings_set(b, "x", t), PORTC_ERR_DTYPE);
  EXPECT_NE(std::string(portc_last_error()).find("x: element 1 is 2147483648, which does not fit the graph's i32"), std::string::npos)
      << portc_last_error();
  portc_tensor_set(t, 1, -2147483648.0);
  ASSERT_EQ(portc_bindings_set(b, "x", t), PORTC_OK) << portc_last_error();
  portc_tensor *out[1] = {nullptr};
  ASSERT_EQ(portc_reference_run(g.get(), b, out), PORTC_OK) << portc_last_error();
  EXPECT_EQ(portc_tensor_get(out[0], 2), -10);
  portc_tensor_free(out[0]);
  portc_tensor_free(t);
  portc_bindings_free(b);
}

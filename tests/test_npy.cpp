// test_npy.cpp: .npy files in and out: every dtype round-trips, and broken files give errors
// that name the file and the problem.
#include <fstream>

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
      {"shape.npy", header("{'descr': '<f4', 'fortran_order': False, 'shape': (x,), }"), PORTC_ERR_PARSE, "malformed shape"},
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
  int64_t s[] = {1};
  portc_tensor *a = portc_tensor_new(PORTC_F32, 1, s);
  EXPECT_EQ(portc_tensor_save_npy(a, "/nonexistent-dir/x.npy"), PORTC_ERR_IO);
  portc_tensor_free(a);
}

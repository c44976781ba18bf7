// test_malformed.cpp: malformed .ptg inputs. Each must fail cleanly with a message that gives
// line:column and what was expected or what is wrong; none may crash (the suite also runs under
// AddressSanitizer and UBSan).
#include "helpers.h"

struct Bad {
  const char *text;
  const char *want; // substring of the error, location included
};

static const Bad cases[] = {
    {"input x f32[4]\n", "m.ptg:1:9: expected ':' and a type, found 'f32'"},
    {"input x: f33[4]\n", "m.ptg:1:10: expected a dtype (f32, f16, bf16, i32, i64, bool), found 'f33'"},
    {"input x: f32[4\n", "m.ptg:1:15: expected ',' or ']', found end of line"},
    {"input x: f32[-4]\n", "m.ptg:1:13: dimension 0 is negative (-4)"},
    {"input x: f32[1,2,3,4,5,6,7,8,9]\n", "m.ptg:1:13: rank 9 is more than 8"},
    {"input x: f32[4]\ninput x: f32[4]\n", "m.ptg:2:7: 'x' is already defined"},
    {"input 3x: f32[4]\n", "m.ptg:1:7: expected a name, found invalid text '3x'"},
    {"input x: f32[4]\ny = exp(z)\n", "m.ptg:2:9: 'z' is not defined"},
    {"input x: f32[4]\ny = expo(x)\n", "m.ptg:2:5: 'expo' is not an op"},
    {"input x: f32[4]\ny = exp x\n", "m.ptg:2:9: expected '(' after the op name, found 'x'"},
    {"input x: f32[4]\ny = exp(x\n", "m.ptg:2:10: expected ',' or ')', found end of line"},
    {"input x: f32[4]\ny = exp(x) extra\n", "m.ptg:2:12: expected end of line, found 'extra'"},
    {"input x: f32[4]\ny = add(x)\n", "m.ptg:2:5: y: add takes 2 inputs, got 1"},
    {"input x: f32[4]\ny = sum(x, axes=1)\n", "m.ptg:2:17: expected '[', found '1'"},
    {"input x: f32[4]\ny = sum(x, axis=[0])\n", "m.ptg:2:12: sum has no attribute 'axis' (it has: axes, keepdim)"},
    {"input x: f32[4]\ny = sum(x, keepdim=yes)\n", "m.ptg:2:20: expected true or false, found 'yes'"},
    {"input x: f32[4]\ny = sum(x, keepdim=true, keepdim=false)\n", "m.ptg:2:26: attribute 'keepdim' is given twice"},
    {"input x: f32[4]\ny = cast(x)\n", "m.ptg:2:5: y: cast: missing attribute 'to'"},
    {"input x: f32[4]\ny = cast(x, to=f128)\n", "m.ptg:2:16: expected a dtype"},
    {"input x: f32[4]\ny = slice(x, axis=0, start=1.5)\n", "m.ptg:2:28: expected an integer, found '1.5'"},
    {"input x: f32[4]\ny = slice(x, axis=0, start=99999999999999999999)\n", "m.ptg:2:28: integer 99999999999999999999 is out of range"},
    {"input x: f32[4]\ny: f32[5] = exp(x)\n", "m.ptg:2:4: y is declared f32[5] but exp gives f32[4]"},
    {"input x: f32[4]\ny: i32[4] = exp(x)\n", "m.ptg:2:4: y is declared i32[4] but exp gives f32[4]"},
    {"input x: f32[4]\ny = matmul(x, x, x)\n", "m.ptg:2:5: y: matmul takes 2 inputs, got 3"},
    {"input a: f32[2, 3]\ny = matmul(a, a)\n", "m.ptg:2:5: y: matmul(a, a): inner dimensions differ: a is [2, 3], a is [2, 3] (3 vs 2)"},
    {"const c: f32[3] = [1, 2]\n", "m.ptg:1:1: c: const: 2 values for 3 elements"},
    {"const c: f32[2] = [1, x]\n", "m.ptg:1:23: expected a number, found 'x'"},
    {"const c: i32[2] = [1, 2.5]\n", "m.ptg:1:23: expected an integer, found '2.5'"},
    {"const c: bool[1] = [2]\n", "m.ptg:1:21: expected true or false, found '2'"},
    {"const c: f32[N] = 1\n", "m.ptg:1:1: c: const: dimension 0 is symbolic"},
    {"const c: f32[2]\n", "m.ptg:1:16: expected '=' and the value, found end of line"},
    {"param w: f32[2] = gaussian(std=1)\n", "m.ptg:1:19: expected zeros, ones, normal(...), uniform(...) or file(\"...\")"},
    {"param w: f32[2] = normal(sigma=1)\n", "m.ptg:1:26: normal takes mean, std and seed, not 'sigma'"},
    {"param w: f32[2] = normal(std=-1)\n", "m.ptg:1:1: w: param w: normal std must be >= 0"},
    {"param w: f32[2] = file(w.npy)\n", "m.ptg:1:24: expected a quoted path, found 'w.npy'"},
    {"param w: f32[2] = file(\"w.npy)\n", "m.ptg:1:24: expected a quoted path, found invalid text"},
    {"param w: i32[2] = uniform(low=0, high=1)\n", "random init needs a floating dtype"},
    {"output y\n", "m.ptg:1:8: 'y' is not defined"},
    {"input x: f32[4]\noutput x, x\n", "m.ptg:2:11: output: 'x' is already an output"},
    {"input x: f32[4]\noutput x y\n", "m.ptg:2:10: expected end of line, found 'y'"},
    {"graph\n", "m.ptg:1:6: expected a graph name, found end of line"},
    {"= exp(x)\n", "m.ptg:1:1: expected a statement (graph, input, param, const, output, update, step, autocast, or NAME = op(...)), found '='"},
    {"input input: f32[4]\n", "m.ptg:1:7: 'input' is a reserved word and cannot name a value"},
    {"input x: f32[4]\ny exp(x)\n", "m.ptg:2:3: expected ':' and a type, or '=' and an op, found 'exp'"},
    {"input x: f32[4]\ny = exp(x) @\n", "m.ptg:2:12: expected end of line, found invalid text '@'"},
    {"input x: f32[4] \xc3\xa9\n", "m.ptg:1:17: expected end of line, found invalid text"},
    {"input x: f32[4]\ny = input(x)\n", "m.ptg:2:5: 'input' is not an op"},
    {"input x: f32[4]\ny = reshape(x, shape=[N, *])\n", "m.ptg:2:26: expected an integer, found '*'"},
    {"input x: f32[4]\ny = pad(x, pads=[1, 1], value=nanx)\n", "expected a number, found 'nanx'"},
};

TEST(Malformed, EachGivesALocatedError) {
  int n = 0;
  for (const Bad &c : cases) {
    portc_graph *g = reinterpret_cast<portc_graph *>(1);
    portc_status st = portc_graph_parse(c.text, "m.ptg", &g);
    EXPECT_NE(st, PORTC_OK) << c.text;
    EXPECT_EQ(g, nullptr) << c.text;
    std::string err = portc_last_error();
    EXPECT_NE(err.find(c.want), std::string::npos) << "input:\n" << c.text << "got:  " << err << "\nwant: " << c.want;
    n++;
  }
  EXPECT_GE(n, 30);
}

TEST(Malformed, EveryProblemIsReportedAndUsesOfFailedValuesStayQuiet) {
  const char *text =
      "input x: f32[4]\n"
      "a = exp(q)\n"          // 2: q is not defined
      "b = neg(a)\n"          // 3: uses a failed value: no second message
      "c = sum(x, axes=[4])\n" // 4: out of range
      "d = relu(x)\n"         // 5: fine
      "e = matmul(d, d, d)\n" // 6: arity
      "output b, d\n";        // 7: b failed: quiet
  portc_graph *g = nullptr;
  EXPECT_NE(portc_graph_parse(text, "m.ptg", &g), PORTC_OK);
  std::string err = portc_last_error();
  EXPECT_NE(err.find("m.ptg:2:9: 'q' is not defined"), std::string::npos) << err;
  EXPECT_NE(err.find("m.ptg:4:5: c: sum(x): axis 4 is out of range for rank 1"), std::string::npos) << err;
  EXPECT_NE(err.find("m.ptg:6:5: e: matmul takes 2 inputs, got 3"), std::string::npos) << err;
  EXPECT_EQ(err.find("m.ptg:3:"), std::string::npos) << err;
  EXPECT_EQ(err.find("m.ptg:7:"), std::string::npos) << err;
  EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 2) << err;
}

TEST(Malformed, NastyBytesDoNotCrash) {
  // truncated, unbalanced and binary-looking inputs: any error is fine, a crash is not
  const char *texts[] = {"", "\n\n\n", "#", "input", "input x:", "input x: f32[", "y = (", "y = exp(", "const c: f32[2] = [",
                         "param w: f32[1] = normal(", "param w: f32[1] = file(\"", "\"\"\"", "[[[[", "y: = a()", "-", "1e999",
                         "const c: f32[] = -", "const c: f32[] = 1e", "x = y = z", "output ,", ")))"};
  for (const char *t : texts) {
    portc_graph *g = nullptr;
    portc_status st = portc_graph_parse(t, "m.ptg", &g);
    if (st == PORTC_OK) portc_graph_free(g);
    else EXPECT_NE(std::string(portc_last_error()).find("m.ptg:"), std::string::npos) << t;
  }
  std::string big(200000, '[');
  portc_graph *g = nullptr;
  EXPECT_NE(portc_graph_parse(("input x: f32" + big).c_str(), "m.ptg", &g), PORTC_OK);
}

TEST(Malformed, LoadReportsMissingFilesAndBinary) {
  portc_graph *g = nullptr;
  EXPECT_EQ(portc_graph_load("/nonexistent/g.ptg", &g), PORTC_ERR_IO);
  EXPECT_NE(std::string(portc_last_error()).find("/nonexistent/g.ptg: cannot open"), std::string::npos);
  std::string path = testing::TempDir() + "/bin.ptg";
  FILE *f = fopen(path.c_str(), "wb");
  fwrite("input x\0: f32[1]", 1, 16, f);
  fclose(f);
  EXPECT_EQ(portc_graph_load(path.c_str(), &g), PORTC_ERR_PARSE);
  EXPECT_NE(std::string(portc_last_error()).find("contains a NUL byte"), std::string::npos);
}

// NULL arguments and out-of-range values to the public calls are errors (or empty answers), never
// a crash; unknown modes and pass names are refused by name (issue 18, defect 9).
TEST(Malformed, NullArgumentsAndUnknownOptionsAreRefused) {
  EXPECT_EQ(portc_graph_hash(nullptr), portc_graph_hash(nullptr));
  EXPECT_EQ(portc_graph_name(nullptr), nullptr);
  EXPECT_EQ(portc_graph_node_count(nullptr), 0);
  EXPECT_EQ(portc_graph_output_count(nullptr), 0);
  EXPECT_EQ(portc_graph_input_count(nullptr), 0);
  EXPECT_LT(portc_graph_output(nullptr, 0), 0);
  EXPECT_LT(portc_graph_input(nullptr, 0), 0);
  EXPECT_LT(portc_graph_find(nullptr, "x"), 0);
  portc_dtype dt;
  EXPECT_FALSE(portc_dtype_parse(nullptr, &dt));
  EXPECT_FALSE(portc_dtype_parse("f32", nullptr));
  EXPECT_EQ(portc_tensor_numel(nullptr), 0);
  EXPECT_TRUE(std::isnan(portc_tensor_get(nullptr, 0)));
  EXPECT_EQ(portc_tensor_save_npy(nullptr, "/tmp/x.npy"), PORTC_ERR_INVALID);
  int64_t shape[1] = {2};
  portc_tensor *t = portc_tensor_new(PORTC_F32, 1, shape);
  EXPECT_TRUE(std::isnan(portc_tensor_get(t, 2))) << "past the end";
  portc_tensor_set(t, -1, 1.0); /* ignored */
  EXPECT_EQ(portc_tensor_save_npy(t, nullptr), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_set(nullptr, "x", t), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_set_symbol(nullptr, "N", 1), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_get(nullptr, "x"), nullptr);
  portc_bindings_set_seed(nullptr, 1);
  Graph g = parse("input x: f32[2]\ny = neg(x)\noutput y\n");
  portc_graph_find(g.get(), nullptr);
  EXPECT_NE(std::string(portc_last_error()).find("NULL name"), std::string::npos) << portc_last_error();
  portc_bindings *b = portc_bindings_new(g.get());
  EXPECT_EQ(portc_bindings_set(b, nullptr, t), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_set(b, "x", nullptr), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_set_symbol(b, nullptr, 1), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_bindings_get(b, nullptr), nullptr);
  double seconds[1];
  EXPECT_EQ(portc_module_time(nullptr, b, 1, seconds), PORTC_ERR_INVALID);
  portc_module_info info = {};
  EXPECT_EQ(portc_module_info_get(nullptr, b, &info), PORTC_ERR_INVALID);
  EXPECT_EQ(portc_module_explain(nullptr, b), nullptr);
  portc_compile_options o = {};
  portc_module *m = nullptr;
  o.mode = (portc_mode)7;
  EXPECT_EQ(portc_compile(g.get(), &o, b, &m), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("unknown mode 7"), std::string::npos) << portc_last_error();
  o.mode = PORTC_MODE_DEFAULT;
  o.dump_after = "fusion";
  EXPECT_EQ(portc_compile(g.get(), &o, b, &m), PORTC_ERR_INVALID);
  EXPECT_NE(std::string(portc_last_error()).find("'fusion' is not a pass"), std::string::npos) << portc_last_error();
  EXPECT_EQ(m, nullptr);
  portc_bindings_free(b);
  portc_tensor_free(t);
}

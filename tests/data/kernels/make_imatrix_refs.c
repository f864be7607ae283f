// Dev-time only (tests/data/kernels/README.md): llama.cpp's importance-weighted quantization of the
// fixture rows, dequantized, as the reference of tests/kernels/quant_weighted_test.cpp. Links
// llama.cpp's libggml-base; reads <data>/kernels/<tensor>_f32.npy and the importance matrix
// <data>/models/llama/imatrix.gguf, writes <out>/<TYPE>.npy (float32, 8 x cols).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml.h"
#include "gguf.h"

// Which fixture rows each type is made from.
struct job {
  enum ggml_type type;
  const char* name;  // ferrum's spelling, the file name
  const char* tensor;
};
static const struct job jobs[] = {
    {GGML_TYPE_Q4_0, "Q4_0", "attn_q"},       {GGML_TYPE_Q4_1, "Q4_1", "attn_q"},
    {GGML_TYPE_Q5_0, "Q5_0", "ffn_gate"},     {GGML_TYPE_Q5_1, "Q5_1", "ffn_gate"},
    {GGML_TYPE_Q2_K, "Q2_K", "ffn_gate"},     {GGML_TYPE_Q3_K, "Q3_K", "ffn_down"},
    {GGML_TYPE_Q4_K, "Q4_K", "ffn_gate"},     {GGML_TYPE_Q5_K, "Q5_K", "ffn_down"},
    {GGML_TYPE_Q6_K, "Q6_K", "ffn_down"},     {GGML_TYPE_IQ4_NL, "IQ4_NL", "attn_q"},
    {GGML_TYPE_IQ4_XS, "IQ4_XS", "ffn_down"},
};

static void die(const char* what, const char* name) {
  fprintf(stderr, "make_imatrix_refs: %s %s\n", what, name);
  exit(1);
}

// A float32 C-order .npy of 2 dimensions (the fixtures' only kind); returns the data, sets rows/cols.
static float* read_npy(const char* path, int* rows, int* cols) {
  FILE* f = fopen(path, "rb");
  if (!f) die("cannot open", path);
  unsigned char pre[10];
  if (fread(pre, 1, 10, f) != 10 || memcmp(pre + 1, "NUMPY", 5) != 0 || pre[6] != 1)
    die("not an npy v1 file:", path);
  const int header_len = pre[8] | (pre[9] << 8);
  char* header = calloc(header_len + 1, 1);
  if (fread(header, 1, header_len, f) != (size_t)header_len) die("truncated", path);
  const char* shape = strstr(header, "'shape': (");
  if (!strstr(header, "'<f4'") || !shape || sscanf(shape, "'shape': (%d, %d)", rows, cols) != 2)
    die("expected float32 (rows, cols):", path);
  free(header);
  const size_t n = (size_t)*rows * *cols;
  float* x = malloc(n * sizeof(float));
  if (fread(x, sizeof(float), n, f) != n) die("truncated", path);
  fclose(f);
  return x;
}

static void write_npy(const char* path, const float* x, int rows, int cols) {
  char header[128];
  int len = snprintf(header, sizeof header, "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }",
                     rows, cols);
  while ((10 + len + 1) % 64 != 0) header[len++] = ' ';  // pad so that the data starts 64-aligned
  header[len++] = '\n';
  FILE* f = fopen(path, "wb");
  if (!f) die("cannot write", path);
  const unsigned char pre[10] = {
      0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
  fwrite(pre, 1, 10, f);
  fwrite(header, 1, len, f);
  fwrite(x, sizeof(float), (size_t)rows * cols, f);
  fclose(f);
}

// The importance of blk.0.<tensor>.weight's columns as llama-quantize computes it: sums / count.
static float* read_importance(struct ggml_context* ctx, const char* tensor, int cols) {
  char name[128];
  snprintf(name, sizeof name, "blk.0.%s.weight.in_sum2", tensor);
  const struct ggml_tensor* sums = ggml_get_tensor(ctx, name);
  snprintf(name, sizeof name, "blk.0.%s.weight.counts", tensor);
  const struct ggml_tensor* counts = ggml_get_tensor(ctx, name);
  if (!sums || !counts || sums->ne[0] != cols || ggml_nelements(counts) != 1)
    die("no dense entry for", tensor);
  const float count = ((const float*)counts->data)[0];
  float* w = malloc(cols * sizeof(float));
  for (int i = 0; i < cols; ++i) w[i] = count > 0 ? ((const float*)sums->data)[i] / count : 1.0f;
  return w;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: make_imatrix_refs <tests/data> <out dir>\n");
    return 2;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/models/llama/imatrix.gguf", argv[1]);
  struct ggml_context* ctx = NULL;
  struct gguf_init_params params = {false, &ctx};
  struct gguf_context* imatrix = gguf_init_from_file(path, params);
  if (!imatrix) die("cannot read", path);
  for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; ++j) {
    int rows, cols;
    snprintf(path, sizeof path, "%s/kernels/%s_f32.npy", argv[1], jobs[j].tensor);
    float* x = read_npy(path, &rows, &cols);
    float* w = read_importance(ctx, jobs[j].tensor, cols);
    const size_t bytes = ggml_row_size(jobs[j].type, cols) * rows;
    void* q = malloc(bytes);
    float* y = malloc((size_t)rows * cols * sizeof(float));
    if (ggml_quantize_chunk(jobs[j].type, x, q, 0, rows, cols, w) != bytes)
      die("unexpected size for", jobs[j].name);
    ggml_get_type_traits(jobs[j].type)->to_float(q, y, (int64_t)rows * cols);
    snprintf(path, sizeof path, "%s/%s.npy", argv[2], jobs[j].name);
    write_npy(path, y, rows, cols);
    printf("%s: %s %d x %d\n", path, jobs[j].tensor, rows, cols);
    free(x), free(w), free(q), free(y);
  }
  gguf_free(imatrix);
  ggml_free(ctx);
  return 0;
}

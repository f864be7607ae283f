// Dev-time only (tests/data/kernels/README.md): links llama.cpp's ggml-quants.c to write the MXFP4 fixture.
// Quantizes float rows to MXFP4 with ggml's reference quantizer and dequantizes them with ggml's
// dequantizer: writes [n floats in][blocks][n floats out] for the ferrum fixture.
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
#include "ggml-quants.h"
int main(int argc, char** argv) {
  const char* in = argv[1]; const char* out = argv[2]; const int n = atoi(argv[3]);
  float* x = malloc(n * 4); float* y = malloc(n * 4);
  FILE* f = fopen(in, "rb"); if (fread(x, 4, n, f) != (size_t)n) return 1; fclose(f);
  const size_t bytes = (size_t)n / 32 * 17;
  unsigned char* q = malloc(bytes);
  quantize_row_mxfp4_ref(x, (block_mxfp4*)q, n);
  dequantize_row_mxfp4((const block_mxfp4*)q, y, n);
  f = fopen(out, "wb"); fwrite(q, 1, bytes, f); fwrite(y, 4, n, f); fclose(f);
  return 0;
}

// The program cachegrind runs: one matmul kernel of kernels.cpp on n x n matrices placed one
// after the other in a 2 MiB-aligned block (A at byte 0, B at 8 n^2, C at 16 n^2, as in
// minitorch.kernels.traces), after a flush that leaves none of them in the simulated caches.
// Usage: cg_main ijk|ikj|tiled n [tile]
//
// Lab: 37_python_to_machine_code
#include <cstdio>
#include <cstdlib>
#include <cstring>

extern "C" {
void a2s_matmul_ijk(const double* a, const double* b, double* c, long n);
void a2s_matmul_ikj(const double* a, const double* b, double* c, long n);
void a2s_matmul_tiled(const double* a, const double* b, double* c, long n, long k, long m,
                      long tile);

// Read a buffer far larger than any simulated cache, so the kernel starts cold.
double a2s_flush(const double* junk, long count) {
  double s = 0.0;
  for (long i = 0; i < count; i += 8) s += junk[i];
  return s;
}
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ijk|ikj|tiled n [tile]\n", argv[0]);
    return 2;
  }
  const long n = std::atol(argv[2]);
  const long tile = argc > 3 ? std::atol(argv[3]) : 16;
  const size_t align = size_t(1) << 21;
  const size_t bytes = 3 * size_t(n) * size_t(n) * sizeof(double);
  double* base = static_cast<double*>(std::aligned_alloc(align, (bytes + align - 1) / align * align));
  const long junk_count = 1L << 20;  // 8 MiB
  double* junk = static_cast<double*>(std::calloc(junk_count, sizeof(double)));
  if (base == nullptr || junk == nullptr || n < 1 || tile < 1) return 3;
  double *a = base, *b = base + n * n, *c = base + 2 * n * n;
  for (long i = 0; i < n * n; ++i) {
    a[i] = double(i % 7) * 0.5;
    b[i] = double(i % 5) * 0.25;
    c[i] = 0.0;
  }
  double sink = a2s_flush(junk, junk_count);
  if (std::strcmp(argv[1], "ijk") == 0) {
    a2s_matmul_ijk(a, b, c, n);
  } else if (std::strcmp(argv[1], "ikj") == 0) {
    a2s_matmul_ikj(a, b, c, n);
  } else if (std::strcmp(argv[1], "tiled") == 0) {
    a2s_matmul_tiled(a, b, c, n, n, n, tile);
  } else {
    return 2;
  }
  for (long i = 0; i < n * n; ++i) sink += c[i];
  std::printf("%.6f\n", sink);
  std::free(junk);
  std::free(base);
  return 0;
}

// The C++ kernels of lab 37: lab 06's matmul loop nests and tiled matmul, lab 08's fused
// bias + GELU (tanh form) and its backward. Row-major float64, extern "C" so that the symbol
// names are the function names (no C++ name mangling) and ctypes can find them.
//
// Lab: 37_python_to_machine_code
#include <cmath>
#include <cstddef>

namespace {

inline long min_of(long a, long b) { return a < b ? a : b; }

constexpr double kSqrt2OverPi = 0.7978845608028654;  // sqrt(2 / pi)
constexpr double kCubic = 0.044715;

}  // namespace

extern "C" {

// C += A @ B, square n x n, i outermost, k innermost: A along a row, B down a column.
void a2s_matmul_ijk(const double* a, const double* b, double* c, long n) {
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < n; ++j)
      for (long k = 0; k < n; ++k) c[i * n + j] += a[i * n + k] * b[k * n + j];
}

// C += A @ B, square n x n, j innermost: B and C walked along rows (stride 1).
void a2s_matmul_ikj(const double* a, const double* b, double* c, long n) {
  for (long i = 0; i < n; ++i)
    for (long k = 0; k < n; ++k)
      for (long j = 0; j < n; ++j) c[i * n + j] += a[i * n + k] * b[k * n + j];
}

// C += A @ B for A (n, k), B (k, m): tiles (ii, kk, jj) outside, i, k, j inside a tile,
// the order of minitorch.kernels.traces.blocked_trace.
void a2s_matmul_tiled(const double* a, const double* b, double* c, long n, long k, long m,
                      long tile) {
  for (long i0 = 0; i0 < n; i0 += tile)
    for (long k0 = 0; k0 < k; k0 += tile)
      for (long j0 = 0; j0 < m; j0 += tile)
        for (long i = i0; i < min_of(i0 + tile, n); ++i)
          for (long p = k0; p < min_of(k0 + tile, k); ++p)
            for (long j = j0; j < min_of(j0 + tile, m); ++j)
              c[i * m + j] += a[i * k + p] * b[p * m + j];  // A reloaded: the store may alias it
}

// y = gelu(x + b) for x (n, d), b (d,), in one pass: x + b never goes back to memory.
void a2s_bias_gelu(const double* x, const double* b, double* y, long n, long d) {
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < d; ++j) {
      const double h = x[i * d + j] + b[j];
      y[i * d + j] = 0.5 * h * (1.0 + std::tanh(kSqrt2OverPi * (h + kCubic * h * h * h)));
    }
}

// dh = g * gelu'(x + b), the gradient of bias_gelu with respect to x (sum it over rows for b).
void a2s_bias_gelu_backward(const double* x, const double* b, const double* g, double* dh,
                            long n, long d) {
  for (long i = 0; i < n; ++i)
    for (long j = 0; j < d; ++j) {
      const double h = x[i * d + j] + b[j];
      const double t = std::tanh(kSqrt2OverPi * (h + kCubic * h * h * h));
      const double du = kSqrt2OverPi * (1.0 + 3.0 * kCubic * h * h);
      dh[i * d + j] = g[i * d + j] * (0.5 * (1.0 + t) + 0.5 * h * (1.0 - t * t) * du);
    }
}

}  // extern "C"

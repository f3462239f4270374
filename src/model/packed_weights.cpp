// model/packed_weights.cpp — writing and reading the rows of a packed matrix (see
// packed_weights.h for the layout).
#include "model/packed_weights.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>

#include "model/thread_pool.h"
#include "util/check.h"

namespace headlab::model {

namespace {

// Runs fn(p0, p1) over the panels that rows [row0, row0 + n) touch, split over the pool when
// the rows are many (a big matrix at load time), else on the caller.
template <typename Fn>
void over_panels(int row0, int n, int cols, Fn fn) {
  const int first = row0 / kPanel, last = (row0 + n - 1) / kPanel + 1;  // panels [first, last)
  const int panels = last - first;
  const int parts = std::size_t(n) * std::size_t(cols) < (1u << 20) ? 1 : std::min(thread_pool_size(), panels);
  if (parts <= 1) {
    fn(first, last);
    return;
  }
  thread_pool_run(parts, [&](int part) {
    const int p0 = first + int(std::int64_t(panels) * part / parts), p1 = first + int(std::int64_t(panels) * (part + 1) / parts);
    if (p0 < p1) fn(p0, p1);
  });
}

}  // namespace

std::size_t packed_bytes(WeightType type, int rows, int cols) {
  return std::size_t((rows + kPanel - 1) / kPanel) * kPanel * std::size_t(packed_k_count(type, cols)) *
         std::size_t(weight_type_size(type));
}

std::size_t packed_matrix_bytes(const PackedMatrix& m) {
  if (!m.quantized()) return packed_bytes(m.type, m.rows, m.cols);
  std::size_t bytes = 0;
  for (const RowBand& b : m.bands) bytes += std::size_t(b.rows) * quant_row_bytes(b.type, m.cols);
  return bytes;
}

bool packed_set_bands(PackedMatrix& m, std::span<const RowBand> bands) {
  if (bands.empty() || bands.size() > std::size_t(kMaxBands)) return false;
  int rows = 0;
  for (const RowBand& b : bands) {
    if (!weight_type_quantized(b.type) || b.rows <= 0 || m.cols % quant_block_elements(b.type) != 0) return false;
    rows += b.rows;
  }
  if (rows != m.rows) return false;
  m.type = bands[0].type;
  m.bands = {};
  std::copy(bands.begin(), bands.end(), m.bands.begin());
  return true;
}

const unsigned char* packed_quant_row(const PackedMatrix& m, int r, WeightType& type) {
  HEADLAB_CHECK(m.quantized() && r >= 0 && r < m.rows);
  std::size_t offset = 0;
  for (const RowBand& b : m.bands) {
    const std::size_t row_bytes = quant_row_bytes(b.type, m.cols);
    if (r < b.rows) {
      type = b.type;
      return m.data + offset + std::size_t(r) * row_bytes;
    }
    r -= b.rows;
    offset += std::size_t(b.rows) * row_bytes;
  }
  HEADLAB_CHECK(false);
  return nullptr;
}

void packed_quant_panel(QuantDecoder d, const PackedMatrix& m, int p, int k0, int K, float* panel) {
  HEADLAB_CHECK(m.quantized() && p >= 0 && p < m.panels() && k0 >= 0 && K >= 0 && k0 + K <= m.cols);
  if (K == 0) return;
  // 256 columns a step: a whole number of blocks of every type (a matrix with 256-weight blocks
  // has cols a multiple of 256; else every block is 32 and cols a multiple of 32)
  constexpr int kStep = 256, kGroup = 8;
  alignas(64) float buf[kGroup * kStep];  // (8, 256): 8 rows' weights of one step
  const int n0 = p * kPanel, nn = std::min(kPanel, m.rows - n0);
  for (int g = 0; g < kPanel; g += kGroup)
    for (int c0 = k0 / kStep * kStep; c0 < k0 + K; c0 += kStep) {
      const int c1 = std::min(c0 + kStep, m.cols);
      for (int i = 0; i < kGroup; i++) {
        float* row = buf + i * kStep;
        if (g + i >= nn) {  // past the last row: zeros
          std::fill(row, row + (c1 - c0), 0.0f);
          continue;
        }
        WeightType t;
        const unsigned char* blocks = packed_quant_row(m, n0 + g + i, t);
        quant_dequantize_with(d, t, blocks + std::size_t(c0 / quant_block_elements(t)) * std::size_t(quant_block_bytes(t)),
                              c1 - c0, row);
      }
      const int ka = std::max(c0, k0), kb = std::min(c1, k0 + K);
      quant_transpose8(d, buf + (ka - c0), kStep, kb - ka, panel + std::size_t(ka - k0) * kPanel + g);
    }
}

void packed_write_blocks(PackedMatrix& m, int row0, int n, const unsigned char* blocks) {
  HEADLAB_CHECK(m.quantized() && row0 >= 0 && n >= 0 && row0 + n <= m.rows);
  if (n == 0) return;
  WeightType first, last;
  unsigned char* at = const_cast<unsigned char*>(packed_quant_row(m, row0, first));
  packed_quant_row(m, row0 + n - 1, last);
  HEADLAB_CHECK(first == last);
  // a big copy in parts over the pool: its page faults (the file's pages read in, the weights'
  // first touched) are most of a load's time, and they go no faster than one core takes them
  const std::size_t bytes = std::size_t(n) * quant_row_bytes(first, m.cols);
  const int parts = bytes < (std::size_t(16) << 20) ? 1 : thread_pool_size();
  thread_pool_run(parts, [&](int part) {
    const std::size_t a = bytes * std::size_t(part) / std::size_t(parts), b = bytes * std::size_t(part + 1) / std::size_t(parts);
    std::memcpy(at + a, blocks + a, b - a);
  });
}

std::int64_t packed_write_rows(PackedMatrix& m, int row0, int n, const float* src) {
  HEADLAB_CHECK(row0 >= 0 && n >= 0 && row0 + n <= m.rows && !m.quantized());
  if (n == 0) return -1;
  const int C = m.cols;
  std::atomic<std::int64_t> first_bad{-1};
  over_panels(row0, n, C, [&](int p0, int p1) {
    std::int64_t bad = -1;
    for (int p = p0; p < p1; p++) {
      const int r0 = std::max(row0, p * kPanel), r1 = std::min(row0 + n, (p + 1) * kPanel);
      for (int r = r0; r < r1; r++) {
        const int j = r - p * kPanel;
        const float* s = src + std::size_t(r - row0) * C;
        const std::size_t base = std::size_t(p) * m.panel_bytes() / std::size_t(weight_type_size(m.type));
        switch (m.type) {
          case WeightType::f32: {
            float* d = reinterpret_cast<float*>(m.data) + base;
            for (int k = 0; k < C; k++) d[packed_element(m.type, k, j)] = s[k];
            break;
          }
          case WeightType::bf16:
          case WeightType::f16: {
            std::uint16_t* d = reinterpret_cast<std::uint16_t*>(m.data) + base;
            const bool bf = m.type == WeightType::bf16;
            for (int k = 0; k < C; k++) {
              const std::uint16_t h = bf ? weight_to_bf16(s[k]) : weight_to_f16(s[k]);
              d[packed_element(m.type, k, j)] = h;
              // all exponent bits set: the value did not fit (the inputs are finite)
              const bool inf = bf ? (h & 0x7f80) == 0x7f80 : (h & 0x7c00) == 0x7c00;
              if (inf && bad < 0) bad = std::int64_t(r - row0) * C + k;
            }
            break;
          }
          default: break;  // quantized: refused above
        }
      }
    }
    if (bad >= 0) {
      std::int64_t cur = first_bad.load();
      while ((cur < 0 || bad < cur) && !first_bad.compare_exchange_weak(cur, bad)) {
      }
    }
  });
  return first_bad.load();
}

void packed_read_rows(const PackedMatrix& m, int row0, int n, float* out) {
  HEADLAB_CHECK(row0 >= 0 && n >= 0 && row0 + n <= m.rows);
  if (n == 0) return;
  const int C = m.cols;
  if (m.quantized()) {
    for (int r = row0; r < row0 + n; r++) {
      WeightType t;
      const unsigned char* blocks = packed_quant_row(m, r, t);
      quant_dequantize_with(quant_decoder_best(), t, blocks, C, out + std::size_t(r - row0) * C);
    }
    return;
  }
  over_panels(row0, n, C, [&](int p0, int p1) {
    for (int p = p0; p < p1; p++) {
      const int r0 = std::max(row0, p * kPanel), r1 = std::min(row0 + n, (p + 1) * kPanel);
      for (int r = r0; r < r1; r++) {
        const int j = r - p * kPanel;
        float* o = out + std::size_t(r - row0) * C;
        const std::size_t base = std::size_t(p) * m.panel_bytes() / std::size_t(weight_type_size(m.type));
        switch (m.type) {
          case WeightType::f32: {
            const float* s = reinterpret_cast<const float*>(m.data) + base;
            for (int k = 0; k < C; k++) o[k] = s[packed_element(m.type, k, j)];
            break;
          }
          case WeightType::bf16: {
            const std::uint16_t* s = reinterpret_cast<const std::uint16_t*>(m.data) + base;
            for (int k = 0; k < C; k++) o[k] = weight_from_bf16(s[packed_element(m.type, k, j)]);
            break;
          }
          case WeightType::f16: {
            const std::uint16_t* s = reinterpret_cast<const std::uint16_t*>(m.data) + base;
            for (int k = 0; k < C; k++) o[k] = weight_from_f16(s[packed_element(m.type, k, j)]);
            break;
          }
          default: break;  // quantized: read above
        }
      }
    }
  });
}

OwnedPackedMatrix packed_matrix_from_rows(WeightType type, const float* weight, int rows, int cols) {
  OwnedPackedMatrix o;
  const std::size_t bytes = (packed_bytes(type, rows, cols) + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, std::max<std::size_t>(bytes, 64));
  if (!data) throw std::bad_alloc();
  o.bytes = std::unique_ptr<unsigned char, void (*)(void*)>(static_cast<unsigned char*>(data), std::free);
  o.m = PackedMatrix{type, rows, cols, o.bytes.get()};
  packed_clear_padding(o.m);
  packed_write_rows(o.m, 0, rows, weight);
  return o;
}

OwnedPackedMatrix packed_matrix_from_blocks(std::span<const RowBand> bands, int cols, const unsigned char* blocks) {
  OwnedPackedMatrix o;
  o.m.cols = cols;
  for (const RowBand& b : bands) o.m.rows += b.rows;
  HEADLAB_CHECK(packed_set_bands(o.m, bands));
  const std::size_t bytes = packed_matrix_bytes(o.m);
  void* data = std::aligned_alloc(64, std::max<std::size_t>((bytes + 63) / 64 * 64, 64));
  if (!data) throw std::bad_alloc();
  o.bytes = std::unique_ptr<unsigned char, void (*)(void*)>(static_cast<unsigned char*>(data), std::free);
  o.m.data = o.bytes.get();
  std::memcpy(o.m.data, blocks, bytes);
  return o;
}

void packed_clear_padding(PackedMatrix& m) {
  if (m.quantized()) return;  // rows of whole blocks: no padding
  // the padding columns of the last panel (rows past m.rows), and for bf16 with an odd C the
  // k = C half of each last pair (a dot product multiplies it by a zero input)
  const int size = weight_type_size(m.type), kn = packed_k_count(m.type, m.cols);
  auto clear = [&](int p, int k, int j) {
    std::memset(m.data + (std::size_t(p) * m.panel_bytes() / std::size_t(size) + packed_element(m.type, k, j)) * size, 0,
                std::size_t(size));
  };
  const int last = m.rows / kPanel;  // the partial panel, if any
  if (m.rows % kPanel != 0)
    for (int r = m.rows; r < (last + 1) * kPanel; r++)
      for (int k = 0; k < kn; k++) clear(last, k, r - last * kPanel);
  for (int k = m.cols; k < kn; k++)
    for (int p = 0; p < m.panels(); p++)
      for (int j = 0; j < kPanel; j++) clear(p, k, j);
}

}  // namespace headlab::model

// model/ops/amx_tiles.h — AMX's tile configuration as every user here sets it: palette 1, all
// eight tiles 16 rows of 64 bytes (a 16 x 16 float32 accumulator, or 16 rows of 32 bf16). The
// packed kernel (matmul_packed.cpp), the peak loop (cpu_peak.cpp) and bench/amx_bench.cpp call it
// once per thread before their tile instructions, and _tile_release() after them. The caller
// checks that the CPU has AMX and that Linux granted the tiles (matmul_packed_kernel() == amx).
//
//   amx_configure_tiles();  ... _tile_loadd / _tile_dpbf16ps ...  _tile_release();
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#include <cstdint>

namespace headlab::model {

// The 64-byte operand of ldtilecfg (Intel SDM, "TILECFG").
struct alignas(64) AmxTileConfig {
  std::uint8_t palette = 1, start_row = 0;
  std::uint8_t reserved[14] = {};
  std::uint16_t colsb[16] = {};  // bytes a row, per tile
  std::uint8_t rows[16] = {};    // rows, per tile
};

__attribute__((target("amx-tile"))) inline void amx_configure_tiles() {
  AmxTileConfig cfg;
  for (int t = 0; t < 8; t++) cfg.colsb[t] = 64, cfg.rows[t] = 16;
  _tile_loadconfig(&cfg);
}

}  // namespace headlab::model
#endif

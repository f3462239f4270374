// model/parameters.cpp — sizes, layout, storage and initialisation of the weights (see
// parameters.h).
#include "model/parameters.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <new>
#include <random>

#include "model/ops/matmul_quant_q8.h"  // matmul_q8_type_supported
#include "model/packed_weights.h"
#include "util/check.h"

namespace headlab::model {

std::array<std::size_t, kNumParameterTensors> parameters_sizes(const ModelConfig& c) {
  const std::size_t V = c.vocab_size, C = c.n_embd, L = c.n_layer, maxT = c.n_ctx;
  const std::size_t mlp = c.mlp ? 1 : 0;
  // GPT-2: QKV = 3C, D = C, FC = F = 4C. Other families: see ModelConfig's block settings.
  const std::size_t QKV = c.qkv_width(), D = c.q_width(), F = c.mlp_width(), FC = c.fc_width();
  const std::size_t learned = c.positions == ModelConfig::Positions::learned ? 1 : 0;
  const std::size_t nb = c.norm == ModelConfig::Norm::layernorm ? 1 : 0;  // RMSNorm has no bias
  const std::size_t qb = c.qkv_bias ? 1 : 0, ob = c.attn_out_bias ? 1 : 0, mb = c.mlp_bias ? 1 : 0;
  return {
      V * C,                  // wte
      learned * maxT * C,     // wpe
      L * C,                  // ln1w
      nb * L * C,             // ln1b
      L * QKV * C,            // qkvw
      qb * L * QKV,           // qkvb
      L * C * D,              // attprojw
      ob * L * C,             // attprojb
      mlp * L * C,            // ln2w
      mlp * nb * L * C,       // ln2b
      mlp * L * FC * C,       // fcw
      mlp * mb * L * FC,      // fcb
      mlp * L * C * F,        // fcprojw
      mlp * mb * L * C,       // fcprojb
      C,                      // lnfw
      nb * C,                 // lnfb
      c.tied ? 0 : V * C,     // lm_head
      0,                      // unused
      (c.qk_norm ? L * c.head_size() : 0),                 // qnormw
      (c.qk_norm ? L * c.head_size() : 0),                 // knormw
      (c.sandwich_norm ? L * C : 0),                       // postattnw
      (c.sandwich_norm && c.mlp ? L * C : 0),              // postmlpw
  };
}

std::size_t parameters_count(const ModelConfig& c) {
  std::size_t n = 0;
  for (std::size_t s : parameters_sizes(c)) n += s;
  return n;
}

std::string_view parameters_name(int index) {
  static constexpr std::string_view kNames[kNumParameterTensors] = {
      "wte",  "wpe",  "ln1w",    "ln1b",    "qkvw", "qkvb", "attprojw", "attprojb", "ln2w",
      "ln2b", "fcw",  "fcb",     "fcprojw", "fcprojb", "lnfw", "lnfb", "lm_head", "unused",
      "qnormw", "knormw", "postattnw", "postmlpw"};
  HEADLAB_CHECK(index >= 0 && index < kNumParameterTensors);
  return kNames[index];
}

int parameters_index(float* ParameterTensors::*tensor) {
  using P = ParameterTensors;
  static float* P::*const kOrder[kNumParameterTensors] = {
      &P::wte,  &P::wpe,     &P::ln1w,    &P::ln1b, &P::qkvw,    &P::qkvb,    &P::attprojw, &P::attprojb,
      &P::ln2w, &P::ln2b,    &P::fcw,     &P::fcb,  &P::fcprojw, &P::fcprojb, &P::lnfw,     &P::lnfb,
      &P::lm_head, &P::unused, &P::qnormw, &P::knormw, &P::postattnw, &P::postmlpw};
  for (int i = 0; i < kNumParameterTensors; i++)
    if (kOrder[i] == tensor) return i;
  HEADLAB_CHECK(false);
  return -1;
}

namespace {
constexpr int kWte = 0, kQkvw = 4, kAttprojw = 6, kFcw = 10, kFcprojw = 12, kLmHead = 16;
}  // namespace

bool parameters_is_matrix(int i) {
  return i == kWte || i == kQkvw || i == kAttprojw || i == kFcw || i == kFcprojw || i == kLmHead;
}

std::array<int, 2> parameters_matrix_shape(const ModelConfig& c, int i) {
  const int C = c.n_embd;
  switch (i) {
    case kWte:
    case kLmHead: return {c.vocab_size, C};
    case kQkvw: return {c.qkv_width(), C};
    case kAttprojw: return {C, c.q_width()};
    case kFcw: return {c.fc_width(), C};
    case kFcprojw: return {C, c.mlp_width()};
    default: HEADLAB_CHECK(false);
  }
  return {0, 0};
}

ParameterTensors parameters_point(float* memory, const ModelConfig& c, bool matrices) {
  auto sizes = parameters_sizes(c);
  ParameterTensors t{};
  float** ptrs[kNumParameterTensors] = {&t.wte,  &t.wpe,      &t.ln1w,     &t.ln1b,    &t.qkvw, &t.qkvb,
                                        &t.attprojw, &t.attprojb, &t.ln2w, &t.ln2b,   &t.fcw,  &t.fcb,
                                        &t.fcprojw,  &t.fcprojb,  &t.lnfw, &t.lnfb,   &t.lm_head, &t.unused,
                                        &t.qnormw,   &t.knormw,   &t.postattnw, &t.postmlpw};
  float* p = memory;
  for (int i = 0; i < kNumParameterTensors; i++) {
    if (!matrices && parameters_is_matrix(i)) {
      *ptrs[i] = nullptr;
      continue;
    }
    *ptrs[i] = p;
    p += sizes[i];
  }
  return t;
}

std::array<float*, kNumParameterTensors> parameters_list(const ParameterTensors& t) {
  return {t.wte,  t.wpe,  t.ln1w, t.ln1b,    t.qkvw,    t.qkvb, t.attprojw, t.attprojb, t.ln2w,
          t.ln2b, t.fcw,  t.fcb,  t.fcprojw, t.fcprojb, t.lnfw, t.lnfb,     t.lm_head,  t.unused,
          t.qnormw, t.knormw, t.postattnw, t.postmlpw};
}

MatrixTypes matrix_types_all(WeightType t) {
  MatrixTypes types;
  types.fill(t);
  return types;
}

Parameters parameters_allocate(const ModelConfig& config) {
  HEADLAB_CHECK(config_validate(config).has_value());
  Parameters p;
  p.config = config;
  p.memory.assign(parameters_count(config), 0.0f);
  p.t = parameters_point(p.memory.data(), config);
  return p;
}

namespace {

// The per-layer matrices of PackedWeights by tensor index (wte and lm_head are single).
std::vector<PackedMatrix>* layer_matrices(PackedWeights& w, int i) {
  switch (i) {
    case kQkvw: return &w.qkvw;
    case kAttprojw: return &w.attprojw;
    case kFcw: return &w.fcw;
    case kFcprojw: return &w.fcprojw;
    default: return nullptr;
  }
}

// Matrix `i`'s slice of layer `layer` (0 for wte and lm_head).
PackedMatrix& packed_matrix(PackedWeights& w, int i, int layer) {
  if (i == kWte) return w.wte;
  if (i == kLmHead) return w.lm_head;
  return (*layer_matrices(w, i))[std::size_t(layer)];
}

// The layers of matrix `i` in the config (1 for wte and lm_head; 0 for absent tensors).
int matrix_layers(const ModelConfig& c, int i) {
  if (parameters_sizes(c)[std::size_t(i)] == 0) return 0;
  return i == kWte || i == kLmHead ? 1 : c.n_layer;
}

std::size_t vector_count(const ModelConfig& c) {
  std::size_t n = 0;
  auto sizes = parameters_sizes(c);
  for (int i = 0; i < kNumParameterTensors; i++)
    if (!parameters_is_matrix(i)) n += sizes[std::size_t(i)];
  return n;
}

}  // namespace

namespace {

// Parameters with every vector in memory (zeros) and each packed matrix's shape and type set,
// their data not yet pointed anywhere; `at` gets each matrix with its offset in one block (each
// start aligned to 64 bytes), in the order a packed-weights cache stores them. Returns the
// block's size.
std::size_t packed_layout(Parameters& p, const ModelConfig& config, const MatrixTypes& types,
                          std::vector<std::pair<PackedMatrix*, std::size_t>>& at, const MatrixBands* bands = nullptr) {
  HEADLAB_CHECK(config_validate(config).has_value());
  p.config = config;
  p.memory.assign(vector_count(config), 0.0f);
  p.t = parameters_point(p.memory.data(), config, /*matrices=*/false);
  auto w = std::make_shared<PackedWeights>();
  std::size_t total = 0;
  w->qkvw.resize(std::size_t(config.n_layer));
  w->attprojw.resize(std::size_t(config.n_layer));
  if (config.mlp) {
    w->fcw.resize(std::size_t(config.n_layer));
    w->fcprojw.resize(std::size_t(config.n_layer));
  }
  for (int i = 0; i < kNumParameterTensors; i++) {
    if (!parameters_is_matrix(i)) continue;
    const auto [rows, cols] = parameters_matrix_shape(config, i);
    for (int l = 0; l < matrix_layers(config, i); l++) {
      PackedMatrix& m = packed_matrix(*w, i, l);
      m.type = types[std::size_t(i)];
      m.rows = rows, m.cols = cols;
      if (const std::vector<RowBand>* b = bands ? bands->find(i, l) : nullptr)
        HEADLAB_CHECK(packed_set_bands(m, *b));
      at.push_back({&m, total});
      total += (packed_matrix_bytes(m) + 63) / 64 * 64;
    }
  }
  w->bytes = total;
  p.packed = std::move(w);
  return total;
}

}  // namespace

const std::vector<RowBand>* MatrixBands::find(int index, int layer) const {
  const auto& of = bands[std::size_t(index)];
  if (layer < 0 || std::size_t(layer) >= of.size() || of[std::size_t(layer)].empty()) return nullptr;
  return &of[std::size_t(layer)];
}

bool MatrixBands::empty() const {
  for (const auto& of : bands)
    for (const auto& b : of)
      if (!b.empty()) return false;
  return true;
}

std::uint64_t parameters_packed_bytes(const ModelConfig& config, const MatrixTypes& types, const MatrixBands* bands) {
  Parameters p;
  std::vector<std::pair<PackedMatrix*, std::size_t>> at;
  const std::size_t block = packed_layout(p, config, types, at, bands);
  return std::uint64_t(block) + std::uint64_t(p.memory.size()) * sizeof(float);
}

Parameters parameters_allocate_packed(const ModelConfig& config, const MatrixTypes& types, const MatrixBands* bands) {
  Parameters p;
  std::vector<std::pair<PackedMatrix*, std::size_t>> at;
  const std::size_t total = packed_layout(p, config, types, at, bands);
  void* bytes = total ? std::aligned_alloc(64, total) : nullptr;
  if (total && !bytes) throw std::bad_alloc();
  p.packed->memory = std::shared_ptr<unsigned char>(static_cast<unsigned char*>(bytes), std::free);
  for (auto& [m, offset] : at) {
    m->data = p.packed->memory.get() + offset;
    packed_clear_padding(*m);
  }
  return p;
}

std::size_t parameters_vector_count(const ModelConfig& config) { return vector_count(config); }

std::size_t parameters_packed_block_bytes(const ModelConfig& config, const MatrixTypes& types) {
  Parameters p;
  std::vector<std::pair<PackedMatrix*, std::size_t>> at;
  return packed_layout(p, config, types, at);
}

Parameters parameters_from_packed_block(const ModelConfig& config, const MatrixTypes& types,
                                        std::shared_ptr<unsigned char> block, const float* vectors) {
  Parameters p;
  std::vector<std::pair<PackedMatrix*, std::size_t>> at;
  packed_layout(p, config, types, at);
  HEADLAB_CHECK(block != nullptr || p.packed->bytes == 0);
  HEADLAB_CHECK(reinterpret_cast<std::uintptr_t>(block.get()) % 64 == 0);
  p.packed->memory = std::move(block);
  for (auto& [m, offset] : at) m->data = p.packed->memory.get() + offset;
  std::copy(vectors, vectors + p.memory.size(), p.memory.begin());
  return p;
}

namespace {

// Calls fn(layer, row, col, n, at) for each run of a flat range of matrix `i` that lies
// within one row: `n` values starting at (row, col) of layer `layer`, `at` values into the range.
template <typename Fn>
void for_each_row_run(const ModelConfig& c, int i, std::size_t offset, std::size_t count, Fn fn) {
  const auto [rows, cols] = parameters_matrix_shape(c, i);
  const std::size_t per_layer = std::size_t(rows) * std::size_t(cols);
  std::size_t done = 0;
  while (done < count) {
    const std::size_t flat = offset + done;
    const int layer = int(flat / per_layer);
    const std::size_t in_layer = flat % per_layer;
    const int row = int(in_layer / std::size_t(cols)), col = int(in_layer % std::size_t(cols));
    std::size_t n = std::min(count - done, std::size_t(cols - col));
    // whole rows in a block, when the range starts at a row and runs over several
    if (col == 0 && count - done >= std::size_t(cols)) {
      const std::size_t whole = std::min((count - done) / std::size_t(cols), std::size_t(rows - row));
      n = whole * std::size_t(cols);
    }
    fn(layer, row, col, n, done);
    done += n;
  }
}

}  // namespace

std::int64_t parameters_write(Parameters& p, int i, std::size_t offset, const float* values, std::size_t count) {
  HEADLAB_CHECK(offset + count <= parameters_sizes(p.config)[std::size_t(i)]);
  if (!p.packed || !parameters_is_matrix(i)) {
    std::copy(values, values + count, parameters_list(p.t)[std::size_t(i)] + offset);
    return -1;
  }
  std::int64_t bad = -1;
  const int cols = parameters_matrix_shape(p.config, i)[1];
  std::vector<float> row;
  for_each_row_run(p.config, i, offset, count, [&](int layer, int r, int col, std::size_t n, std::size_t at) {
    PackedMatrix& m = packed_matrix(*p.packed, i, layer);
    std::int64_t b = -1;
    if (col == 0 && n % std::size_t(cols) == 0) {
      b = packed_write_rows(m, r, int(n / std::size_t(cols)), values + at);
      if (b >= 0) b += std::int64_t(at);
    } else {  // part of a row: read it, change the part, write it back
      row.resize(std::size_t(cols));
      packed_read_rows(m, r, 1, row.data());
      std::copy(values + at, values + at + n, row.begin() + col);
      b = packed_write_rows(m, r, 1, row.data());
      if (b >= 0) b = std::int64_t(at) + (b - col);
    }
    if (bad < 0 && b >= 0) bad = b;
  });
  return bad;
}

void parameters_write_blocks(Parameters& p, int index, int layer, int row0, int n, const unsigned char* blocks) {
  HEADLAB_CHECK(p.packed && parameters_is_matrix(index) && layer >= 0 && layer < matrix_layers(p.config, index));
  packed_write_blocks(packed_matrix(*p.packed, index, layer), row0, n, blocks);
}

bool parameters_quantized(const Parameters& p) {
  if (!p.packed) return false;
  for (int i = 0; i < kNumParameterTensors; i++)
    if (parameters_is_matrix(i))
      for (int l = 0; l < matrix_layers(p.config, i); l++)
        if (packed_matrix(*p.packed, i, l).quantized()) return true;
  return false;
}

void parameters_read(const Parameters& p, int i, std::size_t offset, std::size_t count, float* out) {
  HEADLAB_CHECK(offset + count <= parameters_sizes(p.config)[std::size_t(i)]);
  if (!p.packed || !parameters_is_matrix(i)) {
    const float* src = parameters_list(p.t)[std::size_t(i)] + offset;
    std::copy(src, src + count, out);
    return;
  }
  const int cols = parameters_matrix_shape(p.config, i)[1];
  std::vector<float> row;
  for_each_row_run(p.config, i, offset, count, [&](int layer, int r, int col, std::size_t n, std::size_t at) {
    const PackedMatrix& m = packed_matrix(*p.packed, i, layer);
    if (col == 0 && n % std::size_t(cols) == 0) {
      packed_read_rows(m, r, int(n / std::size_t(cols)), out + at);
    } else {
      row.resize(std::size_t(cols));
      packed_read_rows(m, r, 1, row.data());
      std::copy(row.begin() + col, row.begin() + col + std::ptrdiff_t(n), out + at);
    }
  });
}

void parameters_read_rows(const Parameters& p, float* ParameterTensors::*tensor, int layer, int row0, int n,
                          float* out) {
  const int i = parameters_index(tensor);
  HEADLAB_CHECK(parameters_is_matrix(i));
  const auto [rows, cols] = parameters_matrix_shape(p.config, i);
  HEADLAB_CHECK(row0 >= 0 && n >= 0 && row0 + n <= rows && layer >= 0 && layer < std::max(1, matrix_layers(p.config, i)));
  parameters_read(p, i, (std::size_t(layer) * rows + std::size_t(row0)) * cols, std::size_t(n) * cols, out);
}

std::vector<float> parameters_tensor(const Parameters& p, int i) {
  std::vector<float> v(parameters_sizes(p.config)[std::size_t(i)]);
  parameters_read(p, i, 0, v.size(), v.data());
  return v;
}

std::vector<float> parameters_to_rows(const Parameters& p) {
  if (!p.packed) return p.memory;
  std::vector<float> rows(parameters_count(p.config));
  const auto sizes = parameters_sizes(p.config);
  std::size_t at = 0;
  for (int i = 0; i < kNumParameterTensors; i++) {
    parameters_read(p, i, 0, sizes[std::size_t(i)], rows.data() + at);
    at += sizes[std::size_t(i)];
  }
  return rows;
}

WeightType parameters_matrix_type(const Parameters& p, int i) {
  if (!p.packed || !parameters_is_matrix(i) || matrix_layers(p.config, i) == 0) return WeightType::f32;
  return packed_matrix(*p.packed, i, 0).type;
}

std::uint64_t parameters_bytes(const Parameters& p) {
  return std::uint64_t(p.memory.size()) * sizeof(float) + (p.packed ? std::uint64_t(p.packed->bytes) : 0);
}

bool parameters_pack(Parameters& p, DtypeChoice choice) {
  if (p.packed) return true;
  const ModelConfig& c = p.config;
  Parameters q = parameters_allocate_packed(c, matrix_types_all(weight_type_for(choice, Dtype::F32)));
  const auto sizes = parameters_sizes(c);
  const auto list = parameters_list(p.t);
  for (int i = 0; i < kNumParameterTensors; i++)
    if (sizes[std::size_t(i)] && parameters_write(q, i, 0, list[std::size_t(i)], sizes[std::size_t(i)]) >= 0) return false;
  p = std::move(q);
  return true;
}

namespace {
// A quantized matrix with a band the 8-bit kernels take (the others keep the float32 path).
bool q8_takes(const PackedMatrix& m) {
  for (const RowBand& b : m.bands)
    if (b.rows > 0 && matmul_q8_type_supported(b.type)) return true;
  return false;
}
}  // namespace

int parameters_set_compute(Parameters& p, ComputeChoice choice) {
  if (!p.packed) return 0;
  int marked = 0;
  for (int i = 0; i < kNumParameterTensors; i++) {
    if (!parameters_is_matrix(i)) continue;
    for (int l = 0; l < matrix_layers(p.config, i); l++) {
      PackedMatrix& m = packed_matrix(*p.packed, i, l);
      m.bf16_inputs = choice == ComputeChoice::bf16 && m.type == WeightType::bf16;
      m.q8_inputs = choice == ComputeChoice::q8 && m.quantized() && q8_takes(m);
      marked += m.bf16_inputs || m.q8_inputs;
    }
  }
  return marked;
}

bool parameters_quantizes_inputs(const Parameters& p) {
  if (!p.packed) return false;
  for (int i = 0; i < kNumParameterTensors; i++)
    if (parameters_is_matrix(i))
      for (int l = 0; l < matrix_layers(p.config, i); l++)
        if (packed_matrix(*p.packed, i, l).q8_inputs) return true;
  return false;
}

bool parameters_rounds_inputs(const Parameters& p) {
  if (!p.packed) return false;
  for (int i = 0; i < kNumParameterTensors; i++)
    if (parameters_is_matrix(i))
      for (int l = 0; l < matrix_layers(p.config, i); l++)
        if (packed_matrix(*p.packed, i, l).bf16_inputs) return true;
  return false;
}

bool parameters_keeps_bf16(const Parameters& p) {
  if (!p.packed) return false;
  for (int i = 0; i < kNumParameterTensors; i++)
    if (parameters_is_matrix(i))
      for (int l = 0; l < matrix_layers(p.config, i); l++)
        if (packed_matrix(*p.packed, i, l).type == WeightType::bf16) return true;
  return false;
}

void parameters_unpack(Parameters& p) {
  if (!p.packed) return;
  Parameters q = parameters_allocate(p.config);
  const auto sizes = parameters_sizes(p.config);
  const auto list = parameters_list(q.t);
  for (int i = 0; i < kNumParameterTensors; i++)
    if (sizes[std::size_t(i)]) parameters_read(p, i, 0, sizes[std::size_t(i)], list[std::size_t(i)]);
  p = std::move(q);
}

void parameters_init_random(Parameters& p, std::uint64_t seed) {
  HEADLAB_CHECK(!p.packed);
  std::mt19937_64 rng(seed);
  auto sizes = parameters_sizes(p.config);
  auto list = parameters_list(p.t);
  const float std_base = 0.02f;
  const float std_resid = 0.02f / std::sqrt(2.0f * p.config.n_layer);
  for (int i = 0; i < kNumParameterTensors; i++) {
    float* w = list[i];
    std::size_t n = sizes[i];
    std::string_view name = parameters_name(i);
    if (name == "ln1w" || name == "ln2w" || name == "lnfw" || name == "qnormw" || name == "knormw" ||
        name == "postattnw" || name == "postmlpw") {
      for (std::size_t j = 0; j < n; j++) w[j] = 1.0f;
    } else if (name == "ln1b" || name == "ln2b" || name == "lnfb" || name == "qkvb" || name == "attprojb" ||
               name == "fcb" || name == "fcprojb") {
      for (std::size_t j = 0; j < n; j++) w[j] = 0.0f;
    } else {
      std::normal_distribution<float> dist(0.0f, (name == "attprojw" || name == "fcprojw") ? std_resid : std_base);
      for (std::size_t j = 0; j < n; j++) w[j] = dist(rng);
    }
  }
}

std::string parameters_find_nonfinite(const Parameters& p) {
  auto sizes = parameters_sizes(p.config);
  std::vector<float> values;
  for (int i = 0; i < kNumParameterTensors; i++) {
    values = parameters_tensor(p, i);
    for (std::size_t j = 0; j < sizes[i]; j++)
      if (!std::isfinite(values[j])) return std::string(parameters_name(i)) + "[" + std::to_string(j) + "]";
  }
  return {};
}

}  // namespace headlab::model

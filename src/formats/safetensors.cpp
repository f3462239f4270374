// formats/safetensors.cpp — the safetensors reader and writer (see safetensors.h).
#include "formats/safetensors.h"
#include "util/file.h"
#include "util/json_depth.h"
#include "util/json_error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <set>
#include <limits>

#include <nlohmann/json.hpp>

namespace headlab::model {

namespace {

bool dtype_parse(const std::string& s, Dtype* out) {
  static const std::pair<const char*, Dtype> table[] = {
      {"F32", Dtype::F32}, {"F16", Dtype::F16}, {"BF16", Dtype::BF16}, {"F64", Dtype::F64},
      {"I64", Dtype::I64}, {"I32", Dtype::I32}, {"I16", Dtype::I16},   {"I8", Dtype::I8},
      {"U8", Dtype::U8},   {"BOOL", Dtype::BOOL}};
  for (const auto& [name, d] : table)
    if (s == name) {
      *out = d;
      return true;
    }
  return false;
}

tl::unexpected<Error> corrupt(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::corrupt, path + ": " + what);
}

// A header is at most 100 MB (the format's own limit).
constexpr std::uint64_t kMaxHeader = 100u << 20;

}  // namespace

std::int64_t SafetensorsTensor::numel() const {
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

const SafetensorsTensor* SafetensorsFile::find(const std::string& name) const {
  for (const SafetensorsTensor& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

// The header length from the first 8 bytes of a file of `size` bytes.
Result<std::uint64_t> header_length(const unsigned char* first8, std::uint64_t size, const std::string& path) {
  if (size < 8) return corrupt(path, "truncated: " + std::to_string(size) + " bytes, less than the 8-byte header length");
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; i--) n = (n << 8) | first8[i];
  if (n > kMaxHeader) return corrupt(path, "header length " + std::to_string(n) + " is larger than 100 MB");
  if (n > size - 8)
    return corrupt(path, "header length " + std::to_string(n) + " runs beyond the end of the file (" +
                             std::to_string(size) + " bytes): truncated or not a safetensors file");
  return n;
}

// Parses and validates the JSON header against a data section of `data_size` bytes.
Result<SafetensorsFile> parse_header(const unsigned char* text, std::uint64_t n, std::uint64_t data_size,
                                     const std::string& path) {
  if (auto s = json_depth_check(std::string_view(reinterpret_cast<const char*>(text), std::size_t(n)), path + ": header");
      !s)
    return tl::unexpected(s.error());
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + n);
  } catch (const nlohmann::json::exception& e) {
    return corrupt(path, std::string("header is not valid JSON: ") + json_error_text(e.what()));
  }
  if (!header.is_object()) return corrupt(path, "header is not a JSON object");

  SafetensorsFile file;
  file.path = path;
  try {
    for (auto it = header.begin(); it != header.end(); ++it) {
      const std::string& name = it.key();
      const nlohmann::json& v = it.value();
      if (name == "__metadata__") {
        if (!v.is_object()) return corrupt(path, "__metadata__ is not an object");
        for (auto m = v.begin(); m != v.end(); ++m) {
          if (!m.value().is_string()) return corrupt(path, "__metadata__ value of \"" + m.key() + "\" is not a string");
          file.metadata[m.key()] = m.value().get<std::string>();
        }
        continue;
      }
      if (!v.is_object()) return corrupt(path, "tensor \"" + name + "\": entry is not an object");
      if (!v.contains("dtype") || !v["dtype"].is_string())
        return corrupt(path, "tensor \"" + name + "\": missing dtype");
      if (!v.contains("shape") || !v["shape"].is_array())
        return corrupt(path, "tensor \"" + name + "\": missing shape");
      if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
        return corrupt(path, "tensor \"" + name + "\": data_offsets must be [begin, end]");
      SafetensorsTensor t;
      t.name = name;
      std::string dt = v["dtype"].get<std::string>();
      if (!dtype_parse(dt, &t.dtype))
        return make_error(ErrorCode::unsupported, path + ": tensor \"" + name + "\": unknown dtype \"" + dt + "\"");
      std::uint64_t numel = 1;
      for (const auto& d : v["shape"]) {
        if (!d.is_number_unsigned()) return corrupt(path, "tensor \"" + name + "\": shape has a non-integer or negative dimension");
        std::uint64_t dim = d.get<std::uint64_t>();
        if (dim > (1ull << 40) || (dim != 0 && numel > (1ull << 40) / dim))
          return corrupt(path, "tensor \"" + name + "\": shape is implausibly large");
        numel *= dim;
        t.shape.push_back(static_cast<std::int64_t>(dim));
      }
      for (const auto& o : v["data_offsets"])
        if (!o.is_number_unsigned()) return corrupt(path, "tensor \"" + name + "\": data_offsets are not non-negative integers");
      t.begin = v["data_offsets"][0].get<std::uint64_t>();
      t.end = v["data_offsets"][1].get<std::uint64_t>();
      if (t.begin > t.end) return corrupt(path, "tensor \"" + name + "\": data_offsets begin > end");
      if (t.end > data_size)
        return corrupt(path, "tensor \"" + name + "\": data_offsets [" + std::to_string(t.begin) + ", " +
                                 std::to_string(t.end) + ") run beyond the data (" + std::to_string(data_size) +
                                 " bytes): file truncated?");
      if (numel * dtype_size(t.dtype) != t.end - t.begin)
        return corrupt(path, "tensor \"" + name + "\": shape x dtype is " + std::to_string(numel * dtype_size(t.dtype)) +
                                 " bytes but data_offsets span " + std::to_string(t.end - t.begin));
      file.tensors.push_back(std::move(t));
    }
  } catch (const nlohmann::json::exception& e) {
    return corrupt(path, std::string("header has a field of the wrong type: ") + json_error_text(e.what()));
  }
  // The tensors must tile the data: no overlap, no gap (the format requires it).
  std::vector<const SafetensorsTensor*> order;
  for (const auto& t : file.tensors) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->begin < b->begin || (a->begin == b->begin && a->end < b->end); });
  std::uint64_t pos = 0;
  for (const SafetensorsTensor* t : order) {
    if (t->begin < pos) return corrupt(path, "tensor \"" + t->name + "\" overlaps the tensor before it");
    if (t->begin > pos) return corrupt(path, "a gap of " + std::to_string(t->begin - pos) + " bytes before tensor \"" + t->name + "\"");
    pos = t->end;
  }
  if (pos != data_size)
    return corrupt(path, std::to_string(data_size - pos) + " bytes after the last tensor belong to none");
  return file;
}

}  // namespace

Result<SafetensorsFile> safetensors_parse(const unsigned char* bytes, std::size_t size, const std::string& path) {
  auto n = header_length(bytes, size, path);
  if (!n) return tl::unexpected(n.error());
  auto file = parse_header(bytes + 8, *n, size - 8 - *n, path);
  if (!file) return file;
  file->data.assign(bytes + 8 + *n, bytes + size);
  return file;
}

namespace {

Result<SafetensorsFile> read_file(const std::string& path, bool lazy) {
  // a directory, a FIFO (whose open would block for ever) or a device: refused by name
  if (auto s = file_check_regular(path); !s) {
    if (s.error().code == ErrorCode::not_found)
      return make_error(ErrorCode::not_found, path + ": cannot open (missing model.safetensors?)");
    return tl::unexpected(s.error());
  }
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return make_error(ErrorCode::not_found, path + ": cannot open (missing model.safetensors?)");
  const std::streamoff size = in.tellg();
  if (size < 0) return make_error(ErrorCode::io_error, path + ": cannot tell its size");
  in.seekg(0);
  // Header first, validated, then the data straight into its buffer: one copy of the weights.
  unsigned char first8[8] = {};
  if (size >= 8 && !in.read(reinterpret_cast<char*>(first8), 8))
    return make_error(ErrorCode::io_error, path + ": read failed");
  auto n = header_length(first8, static_cast<std::uint64_t>(size), path);
  if (!n) return tl::unexpected(n.error());
  std::vector<unsigned char> header(*n);
  if (*n > 0 && !in.read(reinterpret_cast<char*>(header.data()), static_cast<std::streamsize>(*n)))
    return make_error(ErrorCode::io_error, path + ": read failed");
  const std::uint64_t data_size = static_cast<std::uint64_t>(size) - 8 - *n;
  auto file = parse_header(header.data(), *n, data_size, path);
  if (!file) return file;
  file->data_start = 8 + *n;
  if (lazy) {
    file->lazy = true;
    return file;
  }
  try {
    file->data.resize(data_size);
  } catch (const std::bad_alloc&) {
    return make_error(ErrorCode::unsupported, path + ": cannot hold its " + std::to_string(data_size) +
                                                  " bytes of tensors in memory");
  }
  if (data_size > 0 && !in.read(reinterpret_cast<char*>(file->data.data()), static_cast<std::streamsize>(data_size)))
    return make_error(ErrorCode::io_error, path + ": read failed");
  return file;
}

}  // namespace

Result<SafetensorsFile> safetensors_read(const std::string& path) { return read_file(path, false); }
Result<SafetensorsFile> safetensors_open(const std::string& path) { return read_file(path, true); }

Result<std::vector<SafetensorsFile>> safetensors_open_index(const std::string& index_path) {
  namespace fs = std::filesystem;
  auto text = file_read(index_path, std::uint64_t(64) << 20);  // an index of 100,000 tensors is about 10 MB
  if (!text) return tl::unexpected(text.error());
  if (auto s = json_depth_check(*text, index_path); !s) return tl::unexpected(s.error());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, index_path + ": not valid JSON: " + json_error_text(e.what()));
  }
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    return make_error(ErrorCode::corrupt, index_path + ": expected an object with a \"weight_map\" object");
  std::vector<std::string> order;                 // shard names, first named first
  std::map<std::string, std::string> shard_of;    // tensor -> shard
  for (const auto& [tensor, shard] : j["weight_map"].items()) {
    if (!shard.is_string())
      return make_error(ErrorCode::corrupt, index_path + ": the shard of \"" + tensor + "\" is not a string");
    const std::string name = shard.get<std::string>();
    // a shard is a file beside the index, never a path elsewhere
    if (name.empty() || name.find('/') != std::string::npos || name.find('\\') != std::string::npos || name == "." ||
        name == "..")
      return make_error(ErrorCode::corrupt, index_path + ": shard \"" + name + "\" of \"" + tensor +
                                                "\" is not a file name in the index's directory");
    if (std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
    shard_of[tensor] = name;
  }
  std::vector<SafetensorsFile> files;
  std::map<std::string, std::string> holder;  // tensor -> the shard that holds it
  for (const std::string& name : order) {
    auto f = safetensors_open((fs::path(index_path).parent_path() / name).string());
    if (!f) return tl::unexpected(f.error());
    for (const SafetensorsTensor& t : f->tensors) {
      if (holder.count(t.name))
        return make_error(ErrorCode::corrupt, index_path + ": tensor \"" + t.name + "\" is held by both \"" +
                                                  holder[t.name] + "\" and \"" + name + "\"");
      holder[t.name] = name;
    }
    files.push_back(std::move(*f));
  }
  for (const auto& [tensor, shard] : shard_of)
    if (!holder.count(tensor) || holder[tensor] != shard)
      return make_error(ErrorCode::corrupt, index_path + ": the index puts tensor \"" + tensor + "\" in \"" + shard +
                                                "\", which does not hold it");
  return files;
}

Status safetensors_to_f32(const SafetensorsFile& file, const SafetensorsTensor& t, float* out) {
  return safetensors_to_f32_range(file, t, 0, t.numel(), out);
}

Status safetensors_to_f32_range(const SafetensorsFile& file, const SafetensorsTensor& t, std::int64_t first,
                                std::int64_t n, float* out) {
  const bool floating = t.dtype == Dtype::F32 || t.dtype == Dtype::F16 || t.dtype == Dtype::BF16 || t.dtype == Dtype::F64;
  if (!floating)
    return make_error(ErrorCode::unsupported, file.path + ": tensor \"" + t.name + "\" has dtype " +
                                                  std::string(dtype_name(t.dtype)) + ", not a floating type");
  if (first < 0 || n < 0 || first + n > t.numel())
    return make_error(ErrorCode::internal, file.path + ": tensor \"" + t.name + "\": elements past its end asked for");
  const std::uint64_t size = std::uint64_t(dtype_size(t.dtype));
  const std::uint64_t begin = t.begin + std::uint64_t(first) * size, bytes = std::uint64_t(n) * size;
  std::vector<unsigned char> staged;
  // a lazy file holds no bytes (data is empty): its tensor is read below, never offset from null
  const unsigned char* p = file.lazy ? nullptr : file.data.data() + begin;
  if (file.lazy) {
    std::ifstream in(file.path, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(file.data_start + begin));
    // F32 goes straight into `out`; narrower types are staged, then widened
    char* dst = reinterpret_cast<char*>(out);
    if (t.dtype != Dtype::F32) {
      staged.resize(bytes);
      dst = reinterpret_cast<char*>(staged.data());
    }
    if (!in || !in.read(dst, static_cast<std::streamsize>(bytes)))
      return make_error(ErrorCode::io_error, file.path + ": tensor \"" + t.name + "\": read failed (file changed since it was opened?)");
    if (t.dtype == Dtype::F32) return {};
    p = staged.data();
  }
  switch (t.dtype) {
    case Dtype::F32:
      std::memcpy(out, p, std::size_t(n) * 4);
      return {};
    case Dtype::F16:
      for (std::int64_t i = 0; i < n; i++) out[i] = f16_to_f32(std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
      return {};
    case Dtype::BF16:
      for (std::int64_t i = 0; i < n; i++) out[i] = bf16_to_f32(std::uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
      return {};
    default: {  // F64
      for (std::int64_t i = 0; i < n; i++) {
        double d;
        std::memcpy(&d, p + 8 * i, 8);
        out[i] = static_cast<float>(d);
      }
      return {};
    }
  }
}

namespace {

// The header and the tensors' bytes, in the order safetensors_write and safetensors_serialize
// both write them: `put(bytes, n)` receives each piece.
template <class Put>
Status safetensors_emit(const std::vector<SafetensorsWriteTensor>& tensors, Dtype dtype,
                        const std::map<std::string, std::string>& metadata, const std::string& what, Put put) {
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16)
    return make_error(ErrorCode::unsupported, what + ": can only write F32, F16 or BF16");
  const int es = dtype_size(dtype);
  nlohmann::ordered_json header;
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t offset = 0;
  for (const auto& t : tensors) {
    std::uint64_t numel = 1;
    for (auto d : t.shape) numel *= static_cast<std::uint64_t>(d);
    header[t.name] = {{"dtype", std::string(dtype_name(dtype))},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + numel * es}}};
    offset += numel * es;
  }
  // replace, not throw: metadata may quote a text that was not UTF-8
  std::string h = header.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  while ((8 + h.size()) % 8 != 0) h.push_back(' ');  // align the data to 8 bytes, as safetensors does
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = static_cast<unsigned char>((std::uint64_t(h.size()) >> (8 * i)) & 0xff);
  put(len, 8);
  put(reinterpret_cast<const unsigned char*>(h.data()), h.size());
  std::vector<unsigned char> buf;
  for (const auto& t : tensors) {
    std::uint64_t numel = 1;
    for (auto d : t.shape) numel *= static_cast<std::uint64_t>(d);
    buf.resize(numel * es);
    for (std::uint64_t i = 0; i < numel; i++) {
      if (dtype == Dtype::F32) {
        std::memcpy(&buf[4 * i], &t.values[i], 4);
      } else {
        std::uint16_t v = dtype == Dtype::F16 ? f32_to_f16(t.values[i]) : f32_to_bf16(t.values[i]);
        buf[2 * i] = static_cast<unsigned char>(v & 0xff);
        buf[2 * i + 1] = static_cast<unsigned char>(v >> 8);
      }
    }
    put(buf.data(), buf.size());
  }
  return {};
}

}  // namespace

Status safetensors_write(const std::string& path, const std::vector<SafetensorsWriteTensor>& tensors, Dtype dtype,
                         const std::map<std::string, std::string>& metadata) {
  if (dtype != Dtype::F32 && dtype != Dtype::F16 && dtype != Dtype::BF16)
    return make_error(ErrorCode::unsupported, path + ": can only write F32, F16 or BF16");
  std::ofstream out(path, std::ios::binary);
  if (!out) return make_error(ErrorCode::io_error, path + ": cannot open for writing");
  Status s = safetensors_emit(tensors, dtype, metadata, path, [&](const unsigned char* p, std::size_t n) {
    out.write(reinterpret_cast<const char*>(p), static_cast<std::streamsize>(n));
  });
  if (!s) return s;
  out.close();
  if (!out) return make_error(ErrorCode::io_error, path + ": write failed (disk full?)");
  return {};
}

Result<std::string> safetensors_serialize(const std::vector<SafetensorsWriteTensor>& tensors, Dtype dtype,
                                          const std::map<std::string, std::string>& metadata) {
  std::string bytes;
  Status s = safetensors_emit(tensors, dtype, metadata, "safetensors", [&](const unsigned char* p, std::size_t n) {
    bytes.append(reinterpret_cast<const char*>(p), n);
  });
  if (!s) return tl::unexpected(s.error());
  return bytes;
}

}  // namespace headlab::model

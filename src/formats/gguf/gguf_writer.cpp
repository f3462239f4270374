// formats/gguf/gguf_writer.cpp — the GGUF writer (see gguf_writer.h).
#include "formats/gguf/gguf_writer.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <new>

#include "formats/gguf/gguf_file.h"
#include "formats/safetensors.h"  // f32_to_f16, f32_to_bf16

namespace headlab::model::gguf {

namespace {

void put(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }
template <class T>
void put_le(std::string& out, T v) { put(out, &v, sizeof v); }  // x86: already little-endian
void put_string(std::string& out, const std::string& s) {
  put_le<std::uint64_t>(out, s.size());
  out += s;
}

void put_value(std::string& out, const MetadataValue& v) {
  put_le<std::uint32_t>(out, std::uint32_t(v.type));
  if (v.type == ValueType::string) {
    put_string(out, v.text);
  } else if (v.type == ValueType::array) {
    put_le<std::uint32_t>(out, std::uint32_t(v.element_type));
    if (v.element_type == ValueType::string) {
      put_le<std::uint64_t>(out, v.strings.size());
      for (const std::string& s : v.strings) put_string(out, s);
    } else {
      put_le<std::uint64_t>(out, v.numbers.size());
      for (std::uint64_t bits : v.numbers) put(out, &bits, std::size_t(value_type_size(v.element_type)));
    }
  } else {
    put(out, &v.bits, std::size_t(value_type_size(v.type)));
  }
}

std::uint64_t float_bits(float f) {
  std::uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

MetadataValue scalar(ValueType type, std::uint64_t bits) {
  MetadataValue m;
  m.type = type;
  m.bits = bits;
  return m;
}
MetadataValue array_of(ValueType element) {
  MetadataValue m;
  m.type = ValueType::array;
  m.element_type = element;
  return m;
}

}  // namespace

MetadataValue meta_u32(std::uint32_t v) { return scalar(ValueType::u32, v); }
MetadataValue meta_i32(std::int32_t v) { return scalar(ValueType::i32, std::uint32_t(v)); }
MetadataValue meta_f32(float v) { return scalar(ValueType::f32, float_bits(v)); }
MetadataValue meta_bool(bool v) { return scalar(ValueType::boolean, v ? 1u : 0u); }
MetadataValue meta_string(std::string v) {
  MetadataValue m = scalar(ValueType::string, 0);
  m.text = std::move(v);
  return m;
}
MetadataValue meta_strings(std::vector<std::string> v) {
  MetadataValue m = array_of(ValueType::string);
  m.strings = std::move(v);
  return m;
}
MetadataValue meta_f32s(const std::vector<float>& v) {
  MetadataValue m = array_of(ValueType::f32);
  for (float f : v) m.numbers.push_back(float_bits(f));
  return m;
}
MetadataValue meta_i32s(const std::vector<std::int32_t>& v) {
  MetadataValue m = array_of(ValueType::i32);
  for (std::int32_t i : v) m.numbers.push_back(std::uint32_t(i));
  return m;
}

Status file_write(const std::string& path, const std::vector<Metadata>& metadata, const std::vector<WriteTensor>& tensors) {
  std::string head;
  put_le<std::uint32_t>(head, kMagic);
  put_le<std::uint32_t>(head, 3);
  put_le<std::uint64_t>(head, tensors.size());
  put_le<std::uint64_t>(head, metadata.size());
  for (const auto& [key, value] : metadata) {
    put_string(head, key);
    put_value(head, value);
  }
  std::uint64_t offset = 0;
  std::vector<std::uint64_t> offsets;
  for (const WriteTensor& t : tensors) {
    if (t.name.empty()) return make_error(ErrorCode::invalid_argument, path + ": a tensor without a name");
    if (t.type != TensorType::f32 && t.type != TensorType::f16 && t.type != TensorType::bf16)
      return make_error(ErrorCode::invalid_argument, path + ": tensor \"" + t.name + "\": headlab writes F32, F16 or BF16");
    put_string(head, t.name);
    put_le<std::uint32_t>(head, std::uint32_t(t.ne.size()));
    std::uint64_t n = 1;
    for (std::int64_t d : t.ne) {
      put_le<std::uint64_t>(head, std::uint64_t(d));
      n *= std::uint64_t(d);
    }
    put_le<std::uint32_t>(head, std::uint32_t(t.type));
    put_le<std::uint64_t>(head, offset);
    offsets.push_back(offset);
    offset += n * std::uint64_t(block_bytes(t.type));
    offset += (kDefaultAlignment - offset % kDefaultAlignment) % kDefaultAlignment;
  }
  head.append((kDefaultAlignment - head.size() % kDefaultAlignment) % kDefaultAlignment, '\0');

  std::unique_ptr<std::FILE, int (*)(std::FILE*)> out(std::fopen(path.c_str(), "wb"), std::fclose);
  if (!out) return make_error(ErrorCode::io_error, path + ": cannot open for writing: " + std::strerror(errno));
  bool ok = std::fwrite(head.data(), 1, head.size(), out.get()) == head.size();
  std::uint64_t written = 0;
  std::vector<std::uint16_t> half;
  std::vector<float> filled;
  for (std::size_t i = 0; i < tensors.size() && ok; i++) {
    const WriteTensor& t = tensors[i];
    const std::string pad(std::size_t(offsets[i] - written), '\0');
    ok = std::fwrite(pad.data(), 1, pad.size(), out.get()) == pad.size();
    written = offsets[i];
    std::uint64_t n = 1;
    for (std::int64_t d : t.ne) n *= std::uint64_t(d);
    const float* values = t.values;
    if (!values) {
      try {
        filled.assign(std::size_t(n), 0.0f);
      } catch (const std::bad_alloc&) {
        return make_error(ErrorCode::unsupported, path + ": not enough memory to write tensor \"" + t.name + "\"");
      }
      if (t.fill) t.fill(filled.data());
      values = filled.data();
    }
    if (t.type == TensorType::f32) {
      ok = ok && std::fwrite(values, 4, std::size_t(n), out.get()) == n;
      written += 4 * n;
    } else {
      half.resize(std::size_t(n));
      for (std::uint64_t j = 0; j < n; j++) half[j] = t.type == TensorType::f16 ? f32_to_f16(values[j]) : f32_to_bf16(values[j]);
      ok = ok && std::fwrite(half.data(), 2, std::size_t(n), out.get()) == n;
      written += 2 * n;
    }
  }
  if (!ok || std::fflush(out.get()) != 0) return make_error(ErrorCode::io_error, path + ": write failed: " + std::strerror(errno));
  return {};
}

}  // namespace headlab::model::gguf

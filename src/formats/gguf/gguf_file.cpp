// formats/gguf/gguf_file.cpp — the GGUF reader (see gguf_file.h). A Cursor reads the header
// with every read bounds-checked; a count is compared with the bytes left (each element
// takes at least its minimum size) before anything is reserved for it.
#include "formats/gguf/gguf_file.h"
#include "util/file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

namespace headlab::model::gguf {

namespace {

// Reads little-endian values from [pos, size) of the file; the first failure is kept.
class Cursor {
 public:
  Cursor(const unsigned char* bytes, std::uint64_t size, const std::string& path) : b_(bytes), size_(size), path_(path) {}
  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return size_ - pos_; }

  template <class T>
  Result<T> read(const char* what) {
    if (left() < sizeof(T)) return fail<T>(std::string("the file ends inside ") + what + " at byte " + std::to_string(pos_));
    T v;
    std::memcpy(&v, b_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  Result<std::string> read_string(const std::string& what) {
    auto n = read<std::uint64_t>(what.c_str());
    if (!n) return tl::unexpected(n.error());
    if (*n > left())
      return fail<std::string>(what + " says it is " + std::to_string(*n) + " bytes long but only " + std::to_string(left()) +
                               " bytes of the file are left");
    std::string s(reinterpret_cast<const char*>(b_ + pos_), std::size_t(*n));
    pos_ += *n;
    return s;
  }
  const unsigned char* here() const { return b_ + pos_; }
  void skip(std::uint64_t n) { pos_ += n; }

  template <class T>
  Result<T> fail(const std::string& message) const {
    return make_error(ErrorCode::corrupt, path_ + ": " + message);
  }

 private:
  const unsigned char* b_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  const std::string& path_;
};

// The fewest bytes one value of the type takes in the file.
std::uint64_t min_value_bytes(ValueType t) {
  if (t == ValueType::string) return 8;
  if (t == ValueType::array) return 4 + 8;
  return std::uint64_t(value_type_size(t));
}

Result<ValueType> read_value_type(Cursor& c, const std::string& where) {
  auto t = c.read<std::uint32_t>("a value type");
  if (!t) return tl::unexpected(t.error());
  if (*t >= kValueTypeCount) return c.fail<ValueType>(where + " has unknown value type " + std::to_string(*t));
  return static_cast<ValueType>(*t);
}

Result<Value> read_value(Cursor& c, ValueType type, const std::string& where, int depth) {
  Value v;
  v.type = type;
  if (type == ValueType::string) {
    auto s = c.read_string(where + "'s string");
    if (!s) return tl::unexpected(s.error());
    v.text = std::move(*s);
    return v;
  }
  if (type != ValueType::array) {
    const int n = value_type_size(type);
    if (c.left() < std::uint64_t(n)) return c.fail<Value>("the file ends inside the value of " + where);
    std::memcpy(&v.bits, c.here(), std::size_t(n));
    c.skip(std::uint64_t(n));
    if (type == ValueType::boolean && v.bits > 1)
      return c.fail<Value>(where + " is a bool of value " + std::to_string(v.bits) + " (0 or 1)");
    return v;
  }
  auto et = read_value_type(c, where + "'s array");
  if (!et) return tl::unexpected(et.error());
  auto count = c.read<std::uint64_t>("an array length");
  if (!count) return tl::unexpected(count.error());
  v.element_type = *et;
  v.count = *count;
  if (*et == ValueType::array && depth >= 1)
    return c.fail<Value>(where + " nests arrays more than two deep (headlab reads arrays of arrays at most)");
  // each element takes at least its minimum size: a count the file cannot hold is refused
  // before a single element is reserved
  const std::uint64_t least = min_value_bytes(*et);
  if (least > 0 && v.count > c.left() / least)
    return c.fail<Value>(where + " says its array holds " + std::to_string(v.count) + " " +
                         std::string(value_type_name(*et)) + " values but only " + std::to_string(c.left()) +
                         " bytes of the file are left");
  if (*et == ValueType::string) {
    v.strings.reserve(std::size_t(v.count));
    for (std::uint64_t i = 0; i < v.count; i++) {
      auto s = c.read_string(where + "[" + std::to_string(i) + "]");
      if (!s) return tl::unexpected(s.error());
      v.strings.push_back(std::move(*s));
    }
  } else if (*et == ValueType::array) {
    v.arrays.reserve(std::size_t(v.count));
    for (std::uint64_t i = 0; i < v.count; i++) {
      auto e = read_value(c, ValueType::array, where + "[" + std::to_string(i) + "]", depth + 1);
      if (!e) return tl::unexpected(e.error());
      v.arrays.push_back(std::move(*e));
    }
  } else {
    v.elements = c.here();
    c.skip(v.count * least);
    if (*et == ValueType::boolean)
      for (std::uint64_t i = 0; i < v.count; i++)
        if (v.elements[i] > 1) return c.fail<Value>(where + "[" + std::to_string(i) + "] is a bool that is neither 0 nor 1");
  }
  return v;
}

bool is_integer_type(ValueType t) {
  switch (t) {
    case ValueType::u8: case ValueType::i8: case ValueType::u16: case ValueType::i16: case ValueType::u32:
    case ValueType::i32: case ValueType::u64: case ValueType::i64: return true;
    default: return false;
  }
}

std::optional<std::int64_t> int_of(ValueType t, std::uint64_t bits) {
  switch (t) {
    case ValueType::u8: case ValueType::u16: case ValueType::u32: return std::int64_t(bits);
    case ValueType::u64:
      if (bits > std::uint64_t(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
      return std::int64_t(bits);
    case ValueType::i8: return std::int64_t(std::int8_t(bits));
    case ValueType::i16: return std::int64_t(std::int16_t(bits));
    case ValueType::i32: return std::int64_t(std::int32_t(bits));
    case ValueType::i64: return std::int64_t(bits);
    default: return std::nullopt;
  }
}

std::optional<double> number_of(ValueType t, std::uint64_t bits) {
  if (t == ValueType::f32) {
    float f;
    const std::uint32_t b = std::uint32_t(bits);
    std::memcpy(&f, &b, 4);
    return double(f);
  }
  if (t == ValueType::f64) {
    double d;
    std::memcpy(&d, &bits, 8);
    return d;
  }
  if (t == ValueType::u64) return double(bits);
  if (auto i = int_of(t, bits)) return double(*i);
  return std::nullopt;
}

std::uint64_t element_bits(const Value& v, std::uint64_t i) {
  const int n = value_type_size(v.element_type);
  std::uint64_t bits = 0;
  std::memcpy(&bits, v.elements + i * std::uint64_t(n), std::size_t(n));
  return bits;
}

}  // namespace

bool Value::is_integer() const { return is_integer_type(type); }
std::optional<std::int64_t> Value::as_int() const { return int_of(type, bits); }
std::optional<double> Value::as_number() const { return number_of(type, bits); }
std::optional<bool> Value::as_bool() const {
  if (type != ValueType::boolean) return std::nullopt;
  return bits != 0;
}
std::optional<std::int64_t> Value::element_int(std::uint64_t i) const {
  if (type != ValueType::array || !elements || i >= count) return std::nullopt;
  return int_of(element_type, element_bits(*this, i));
}
std::optional<double> Value::element_number(std::uint64_t i) const {
  if (type != ValueType::array || !elements || i >= count) return std::nullopt;
  return number_of(element_type, element_bits(*this, i));
}

std::int64_t TensorInfo::elements() const {
  std::int64_t n = 1;
  for (std::int64_t d : ne) n *= d;
  return n;
}

const Value* File::find(std::string_view key) const {
  for (const auto& [k, v] : metadata)
    if (k == key) return &v;
  return nullptr;
}

const TensorInfo* File::find_tensor(std::string_view name) const {
  for (const TensorInfo& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

Result<File> file_parse(const unsigned char* bytes, std::uint64_t size, const std::string& path) {
  Cursor c(bytes, size, path);
  File f;
  f.path = path;
  f.bytes = bytes;
  f.size = size;
  auto magic = c.read<std::uint32_t>("the magic number");
  if (!magic) return tl::unexpected(magic.error());
  if (*magic != kMagic) return make_error(ErrorCode::corrupt, path + ": not a GGUF file (it does not start with \"GGUF\")");
  auto version = c.read<std::uint32_t>("the version");
  if (!version) return tl::unexpected(version.error());
  if (*version == 1)
    return make_error(ErrorCode::unsupported, path + ": GGUF version 1 (32-bit counts) is not supported; "
                                                     "headlab reads versions 2 and 3");
  if ((*version & 0xffff) == 0 && *version != 0)
    return make_error(ErrorCode::unsupported, path + ": a big-endian GGUF file (version " +
                                                  std::to_string(__builtin_bswap32(*version)) + " byte-swapped) is not supported");
  if (*version != 2 && *version != 3)
    return make_error(ErrorCode::unsupported, path + ": GGUF version " + std::to_string(*version) +
                                                  " is not supported (2 and 3 are)");
  f.version = *version;
  auto n_tensors = c.read<std::uint64_t>("the tensor count");
  if (!n_tensors) return tl::unexpected(n_tensors.error());
  auto n_kv = c.read<std::uint64_t>("the metadata count");
  if (!n_kv) return tl::unexpected(n_kv.error());
  // a key-value pair takes at least 8 + 4 + 1 bytes, a tensor info 8 + 4 + 4 + 8
  if (*n_kv > c.left() / 13)
    return c.fail<File>("the header says it has " + std::to_string(*n_kv) + " metadata values but the file (" +
                        std::to_string(size) + " bytes) cannot hold that many");
  if (*n_tensors > c.left() / 24)
    return c.fail<File>("the header says it has " + std::to_string(*n_tensors) + " tensors but the file (" +
                        std::to_string(size) + " bytes) cannot hold that many");

  f.metadata.reserve(std::size_t(*n_kv));
  std::set<std::string> keys;
  for (std::uint64_t i = 0; i < *n_kv; i++) {
    auto key = c.read_string("metadata key " + std::to_string(i));
    if (!key) return tl::unexpected(key.error());
    if (key->empty()) return c.fail<File>("metadata key " + std::to_string(i) + " is empty");
    if (!keys.insert(*key).second) return c.fail<File>("metadata key \"" + *key + "\" appears twice");
    auto type = read_value_type(c, "metadata \"" + *key + "\"");
    if (!type) return tl::unexpected(type.error());
    auto value = read_value(c, *type, "metadata \"" + *key + "\"", 0);
    if (!value) return tl::unexpected(value.error());
    f.metadata.emplace_back(std::move(*key), std::move(*value));
  }
  if (const Value* a = f.find("general.alignment")) {
    const auto n = a->as_int();
    if (a->type != ValueType::u32 || !n || *n == 0 || (*n & (*n - 1)) != 0)
      return c.fail<File>("general.alignment must be a uint32 power of two (it is a " + std::string(value_type_name(a->type)) +
                          (n ? " of value " + std::to_string(*n) : std::string()) + ")");
    f.alignment = std::uint64_t(*n);
  }

  f.tensors.reserve(std::size_t(*n_tensors));
  std::set<std::string> names;
  for (std::uint64_t i = 0; i < *n_tensors; i++) {
    TensorInfo t;
    auto name = c.read_string("the name of tensor " + std::to_string(i));
    if (!name) return tl::unexpected(name.error());
    t.name = std::move(*name);
    const std::string what = "tensor \"" + t.name + "\"";
    if (!names.insert(t.name).second) return c.fail<File>(what + " appears twice");
    auto n_dims = c.read<std::uint32_t>("a tensor's dimension count");
    if (!n_dims) return tl::unexpected(n_dims.error());
    if (*n_dims == 0 || *n_dims > std::uint32_t(kMaxDims))
      return c.fail<File>(what + " has " + std::to_string(*n_dims) + " dimensions (1 to 4)");
    std::uint64_t elements = 1;
    for (std::uint32_t d = 0; d < *n_dims; d++) {
      auto ne = c.read<std::uint64_t>("a tensor's dimensions");
      if (!ne) return tl::unexpected(ne.error());
      if (*ne == 0 || *ne > (std::uint64_t(1) << 62) || elements > (std::uint64_t(1) << 62) / *ne)
        return c.fail<File>(what + " has dimension " + std::to_string(d) + " of " + std::to_string(*ne) +
                            (*ne == 0 ? " (must be positive)" : ": its element count overflows"));
      elements *= *ne;
      t.ne.push_back(std::int64_t(*ne));
    }
    auto type = c.read<std::uint32_t>("a tensor's type");
    if (!type) return tl::unexpected(type.error());
    if (!tensor_type_known(*type)) {
      const std::string name_of = tensor_type_name(*type);
      const bool ggml_type = name_of.find("unknown") == std::string::npos;
      return make_error(ggml_type ? ErrorCode::unsupported : ErrorCode::corrupt,
                        path + ": " + what + " has " + name_of +
                            (ggml_type ? ", which headlab does not read (F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, "
                                         "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)"
                                       : ", which is no ggml type"));
    }
    t.type = static_cast<TensorType>(*type);
    const std::uint64_t per_block = std::uint64_t(block_elements(t.type));
    if (std::uint64_t(t.ne[0]) % per_block != 0)
      return c.fail<File>(what + " has rows of " + std::to_string(t.ne[0]) + " values, not a multiple of " +
                          tensor_type_name(*type) + "'s block of " + std::to_string(per_block));
    // the blocks must fit in the file (this also keeps the byte count from overflowing)
    if (elements / per_block > size / std::uint64_t(block_bytes(t.type)))
      return c.fail<File>(what + " holds " + std::to_string(elements) + " " + tensor_type_name(*type) +
                          " values, more than the file (" + std::to_string(size) + " bytes) can hold");
    t.bytes = elements / per_block * std::uint64_t(block_bytes(t.type));
    auto offset = c.read<std::uint64_t>("a tensor's offset");
    if (!offset) return tl::unexpected(offset.error());
    t.offset = *offset;
    if (t.offset % f.alignment != 0)
      return c.fail<File>(what + " starts at offset " + std::to_string(t.offset) + ", not a multiple of the alignment " +
                          std::to_string(f.alignment));
    f.tensors.push_back(std::move(t));
  }
  // the data section starts at the next multiple of the alignment
  const std::uint64_t pad = (f.alignment - c.pos() % f.alignment) % f.alignment;
  f.data_start = c.pos() + pad;
  if (f.data_start > size && !f.tensors.empty())
    return c.fail<File>("the file ends before its data section (at byte " + std::to_string(f.data_start) + ")");
  const std::uint64_t data_size = size >= f.data_start ? size - f.data_start : 0;
  for (const TensorInfo& t : f.tensors)
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      return c.fail<File>("tensor \"" + t.name + "\" spans bytes " + std::to_string(t.offset) + " to " +
                          std::to_string(t.offset + t.bytes) + " of the data section, past its end at " +
                          std::to_string(data_size));
  std::vector<const TensorInfo*> by_offset;
  by_offset.reserve(f.tensors.size());
  for (const TensorInfo& t : f.tensors) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) { return a->offset < b->offset; });
  for (std::size_t i = 1; i < by_offset.size(); i++)
    if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
      return c.fail<File>("tensors \"" + by_offset[i - 1]->name + "\" and \"" + by_offset[i]->name + "\" overlap");
  return f;
}

Result<File> file_open(const std::string& path) {
  // a FIFO would block open() for ever, a device has no end: refused by name first
  if (auto s = file_check_regular(path); !s) return tl::unexpected(s.error());
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int e = errno;
    return make_error(e == ENOENT ? ErrorCode::not_found : ErrorCode::io_error, path + ": " + std::strerror(e));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return make_error(ErrorCode::io_error, path + ": not a regular file");
  }
  const std::uint64_t size = std::uint64_t(st.st_size);
  void* map = nullptr;
  if (size > 0) {
    map = ::mmap(nullptr, std::size_t(size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      return make_error(ErrorCode::io_error, path + ": cannot map the file: " + std::strerror(e));
    }
  }
  ::close(fd);
  std::shared_ptr<const void> owner(map, [size](const void* p) {
    if (p) ::munmap(const_cast<void*>(p), std::size_t(size));
  });
  static const unsigned char empty = 0;
  auto f = file_parse(map ? static_cast<const unsigned char*>(map) : &empty, size, path);
  if (!f) return f;
  f->owner = std::move(owner);
  return f;
}

bool is_gguf_path(std::string_view path) {
  return path.size() > 5 && path.substr(path.size() - 5) == ".gguf";
}

}  // namespace headlab::model::gguf

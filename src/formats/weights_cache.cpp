// formats/weights_cache.cpp — the packed weights kept beside a model and mapped back
// (weights_cache.h): write once through a temporary file and a rename, map with mmap.
#include "formats/weights_cache.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/packed_weights.h"
#include "util/file.h"
#include "util/json_error.h"

namespace headlab::model {

namespace {

constexpr char kMagic[8] = {'H', 'L', 'W', 'C', 'A', 'C', 'H', 'E'};
constexpr int kFormat = 1;
constexpr std::uint64_t kAlign = 4096;  // the vectors and the block start on a page
constexpr std::uint64_t kMaxHeader = std::uint64_t(16) << 20;

std::uint64_t align_up(std::uint64_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

// FNV-1a, 64 bits: a stable hash of a header's bytes (not a defence against a forger: the
// cache is the user's own file, validated against accidents).
std::uint64_t fnv1a64(const char* p, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ull) {
  for (std::size_t i = 0; i < n; i++) {
    h ^= static_cast<unsigned char>(p[i]);
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string errno_text(int e) { return std::strerror(e); }

// The matrices present in a config (a tied model has no lm_head; an attention-only one no MLP).
bool matrix_present(const ModelConfig& config, int i) {
  return parameters_is_matrix(i) && parameters_sizes(config)[std::size_t(i)] > 0;
}

// What differs between the stamp a cache holds and the file now, as a sentence's end.
std::string stamp_difference(const WeightsSourceStamp& was, const WeightsSourceStamp& now) {
  if (was.size != now.size)
    return now.name + " is " + std::to_string(now.size) + " bytes, " + std::to_string(was.size) + " when the cache was written";
  if (was.header_fnv1a64 != now.header_fnv1a64 || was.header_bytes != now.header_bytes)
    return now.name + "'s header changed since the cache was written";
  return now.name + " was modified since the cache was written";
}

Result<std::uint64_t> json_u64(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number_unsigned()) return make_error(ErrorCode::corrupt, std::string("no \"") + key + "\"");
  return it->get<std::uint64_t>();
}

// A file descriptor closed on every path out.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status write_all(int fd, const void* data, std::uint64_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t w = ::write(fd, p, std::size_t(std::min<std::uint64_t>(n, std::uint64_t(1) << 30)));
    if (w < 0) {
      if (errno == EINTR) continue;
      return make_error(ErrorCode::io_error, path + ": write failed: " + errno_text(errno));
    }
    p += w, n -= std::uint64_t(w);
  }
  return {};
}

Status write_zeros(int fd, std::uint64_t n, const std::string& path) {
  static const char zeros[kAlign] = {};
  while (n > 0) {
    const std::uint64_t k = std::min<std::uint64_t>(n, kAlign);
    if (Status s = write_all(fd, zeros, k, path); !s) return s;
    n -= k;
  }
  return {};
}

}  // namespace

Result<WeightsFingerprint> weights_fingerprint(const std::vector<WeightsSource>& sources) {
  WeightsFingerprint fp;
  for (const WeightsSource& s : sources) {
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0)
      return make_error(errno == ENOENT ? ErrorCode::not_found : ErrorCode::io_error,
                        s.path + ": cannot read: " + errno_text(errno));
    WeightsSourceStamp stamp;
    stamp.name = std::filesystem::path(s.path).filename().string();
    stamp.size = std::uint64_t(st.st_size);
    stamp.mtime_ns = std::int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
    stamp.header_bytes = std::min(stamp.size, s.header_bytes);
    std::ifstream in(s.path, std::ios::binary);
    if (!in) return make_error(ErrorCode::io_error, s.path + ": cannot open: " + errno_text(errno ? errno : EACCES));
    std::uint64_t h = 0xcbf29ce484222325ull, left = stamp.header_bytes;
    char buf[1 << 16];
    while (left > 0) {
      in.read(buf, std::streamsize(std::min<std::uint64_t>(left, sizeof buf)));
      const std::streamsize got = in.gcount();
      if (got <= 0) return make_error(ErrorCode::io_error, s.path + ": the file ended inside its header while it was read");
      h = fnv1a64(buf, std::size_t(got), h);
      left -= std::uint64_t(got);
    }
    stamp.header_fnv1a64 = h;
    fp.push_back(std::move(stamp));
  }
  return fp;
}

std::string weights_cache_path(const std::string& model_path, DtypeChoice dtype) {
  namespace fs = std::filesystem;
  const std::string name = "headlab-weights." + std::string(dtype_choice_name(dtype)) + ".cache";
  std::error_code ec;
  if (fs::is_directory(model_path, ec)) return (fs::path(model_path) / name).string();
  return model_path + "." + name;
}

Result<Parameters> weights_cache_map(const std::string& cache_path, const ModelConfig& config, const MatrixTypes& types,
                                     const WeightsFingerprint& fingerprint, DtypeChoice dtype) {
  Fd f;
  f.fd = ::open(cache_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (f.fd < 0)
    return make_error(errno == ENOENT ? ErrorCode::not_found : ErrorCode::io_error,
                      cache_path + ": cannot open: " + errno_text(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) return make_error(ErrorCode::io_error, cache_path + ": " + errno_text(errno));
  const std::uint64_t size = std::uint64_t(st.st_size);
  auto corrupt = [&](const std::string& why) { return make_error(ErrorCode::corrupt, cache_path + ": " + why); };
  unsigned char head[16];
  if (size < sizeof head || ::pread(f.fd, head, sizeof head, 0) != ssize_t(sizeof head) ||
      std::memcmp(head, kMagic, sizeof kMagic) != 0)
    return corrupt("not a headlab weights cache (it does not start with HLWCACHE)");
  std::uint64_t n = 0;
  std::memcpy(&n, head + 8, 8);
  if (n > kMaxHeader || n > size - sizeof head) return corrupt("its header length (" + std::to_string(n) + ") is beyond the file");
  std::string text(n, '\0');
  if (::pread(f.fd, text.data(), n, sizeof head) != ssize_t(n)) return corrupt("its header cannot be read");
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    return corrupt(std::string("its header is not JSON: ") + json_error_text(e.what()));
  }
  if (!h.is_object()) return corrupt("its header is not a JSON object");
  auto vectors = json_u64(h, "vectors"), vectors_offset = json_u64(h, "vectors_offset");
  auto block_bytes = json_u64(h, "block_bytes"), block_offset = json_u64(h, "block_offset"), file_bytes = json_u64(h, "file_bytes");
  for (const auto* r : {&vectors, &vectors_offset, &block_bytes, &block_offset, &file_bytes})
    if (!*r) return corrupt("its header is incomplete: " + r->error().message);
  // every value read below may be of another JSON type in a damaged file: each read throws
  // then, and the file is corrupt, not the process
  try {
    if (!h.is_object() || h.value("format", 0) != kFormat)
      return corrupt("written by another version of headlab (format " + (h.is_object() ? h.value("format", nlohmann::json()).dump() : "?") +
                     ", this one reads " + std::to_string(kFormat) + ")");
    if (h.value("dtype", "") != dtype_choice_name(dtype))
      return corrupt("written for --dtype " + h.value("dtype", std::string("?")) + ", not " + std::string(dtype_choice_name(dtype)));
    // the sources, one by one: which one changed, and how
    WeightsFingerprint was;
    try {
      for (const nlohmann::json& s : h.at("sources")) {
        WeightsSourceStamp w;
        w.name = s.at("name").get<std::string>();
        w.size = s.at("size").get<std::uint64_t>();
        w.mtime_ns = s.at("mtime_ns").get<std::int64_t>();
        w.header_bytes = s.at("header_bytes").get<std::uint64_t>();
        w.header_fnv1a64 = std::stoull(s.at("header_fnv1a64").get<std::string>(), nullptr, 16);
        was.push_back(std::move(w));
      }
    } catch (const std::exception& e) {
      return corrupt(std::string("its list of sources is not readable: ") + e.what());
    }
    if (was.size() != fingerprint.size())
      return corrupt("it was written from " + std::to_string(was.size()) + " files and the model has " +
                     std::to_string(fingerprint.size()) + " now");
    for (std::size_t i = 0; i < was.size(); i++) {
      if (was[i].name != fingerprint[i].name)
        return corrupt("it was written from " + was[i].name + ", the model reads " + fingerprint[i].name + " now");
      if (!(was[i] == fingerprint[i])) return corrupt("stale: " + stamp_difference(was[i], fingerprint[i]));
    }
    // the layout: what this config and these types make must be what the cache holds
    const nlohmann::json stored_types = h.value("types", nlohmann::json::object());
    for (int i = 0; i < kNumParameterTensors; i++) {
      if (!matrix_present(config, i)) continue;
      const std::string name(parameters_name(i));
      const std::string want(weight_type_name(types[std::size_t(i)]));
      if (!stored_types.is_object() || stored_types.value(name, "") != want)
        return corrupt("it keeps " + name + " as " + (stored_types.is_object() ? stored_types.value(name, std::string("nothing")) : "nothing") +
                       ", this load keeps it as " + want);
    }
    if (h.value("panel", 0) != kPanel) return corrupt("its panels are not of " + std::to_string(kPanel) + " columns");
  } catch (const nlohmann::json::exception& e) {
    return corrupt(std::string("its header holds a value of the wrong type: ") + json_error_text(e.what()));
  }
  const std::uint64_t want_vectors = parameters_vector_count(config);
  const std::uint64_t want_block = parameters_packed_block_bytes(config, types);
  if (*vectors != want_vectors || *block_bytes != want_block)
    return corrupt("it holds " + std::to_string(*vectors) + " vector weights and " + std::to_string(*block_bytes) +
                   " bytes of panels, this config needs " + std::to_string(want_vectors) + " and " + std::to_string(want_block));
  // (each comparison free of overflow: the vectors' and the block's lengths are this config's)
  const std::uint64_t vectors_bytes = *vectors * sizeof(float);
  if (*vectors_offset % kAlign != 0 || *block_offset % kAlign != 0 || *vectors_offset < sizeof head + n ||
      *vectors_offset > *file_bytes || *block_offset > *file_bytes || *block_offset - *vectors_offset < vectors_bytes ||
      *block_offset < *vectors_offset || *file_bytes - *block_offset < *block_bytes)
    return corrupt("its offsets overlap or are not aligned");
  if (size != *file_bytes)
    return corrupt("truncated or extended: " + std::to_string(size) + " bytes, its header says " + std::to_string(*file_bytes));
  // Private and copy-on-write: nothing writes the panels of a loaded model, and if something
  // did, the file would not change.
  void* base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, f.fd, 0);
  if (base == MAP_FAILED) return make_error(ErrorCode::io_error, cache_path + ": cannot map: " + errno_text(errno));
  // start reading the panels from disk now (a cold cache), while the caller goes on
  ::madvise(static_cast<char*>(base) + *block_offset, *block_bytes, MADV_WILLNEED);
  std::shared_ptr<unsigned char> mapping(static_cast<unsigned char*>(base), [size](unsigned char* b) { ::munmap(b, size); });
  std::shared_ptr<unsigned char> block(mapping, mapping.get() + *block_offset);  // shares the mapping's lifetime
  const float* vector_values = reinterpret_cast<const float*>(mapping.get() + *vectors_offset);
  return parameters_from_packed_block(config, types, std::move(block), vector_values);
}

Status weights_cache_write(const std::string& cache_path, const Parameters& p, const WeightsFingerprint& fingerprint,
                           DtypeChoice dtype) {
  namespace fs = std::filesystem;
  if (!p.packed) return make_error(ErrorCode::unsupported, cache_path + ": a model of float32 rows (for training) is not cached");
  nlohmann::json h;
  h["format"] = kFormat;
  h["dtype"] = std::string(dtype_choice_name(dtype));
  h["panel"] = kPanel;
  nlohmann::json sources = nlohmann::json::array();
  for (const WeightsSourceStamp& s : fingerprint) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(s.header_fnv1a64));
    sources.push_back({{"name", s.name}, {"size", s.size}, {"mtime_ns", s.mtime_ns}, {"header_bytes", s.header_bytes},
                       {"header_fnv1a64", hex}});
  }
  h["sources"] = sources;
  nlohmann::json types = nlohmann::json::object();
  for (int i = 0; i < kNumParameterTensors; i++)
    if (matrix_present(p.config, i)) types[std::string(parameters_name(i))] = std::string(weight_type_name(parameters_matrix_type(p, i)));
  h["types"] = types;
  const std::uint64_t vectors_bytes = std::uint64_t(p.memory.size()) * sizeof(float);
  // the offsets depend on the header's length, which depends on the offsets' digits: fix them
  // at a width large enough for any file
  std::uint64_t header_len = 0, vectors_offset = 0, block_offset = 0, file_bytes = 0;
  std::string text;
  for (int round = 0; round < 3; round++) {
    vectors_offset = align_up(16 + header_len);
    block_offset = align_up(vectors_offset + vectors_bytes);
    file_bytes = block_offset + p.packed->bytes;
    h["vectors"] = std::uint64_t(p.memory.size());
    h["vectors_offset"] = vectors_offset;
    h["block_bytes"] = std::uint64_t(p.packed->bytes);
    h["block_offset"] = block_offset;
    h["file_bytes"] = file_bytes;
    text = h.dump();
    if (text.size() == header_len) break;
    header_len = text.size();
  }
  if (align_up(16 + text.size()) != vectors_offset) return make_error(ErrorCode::internal, cache_path + ": header layout did not settle");

  // room first: a cache that cannot fit is not started
  const fs::path dir = fs::path(cache_path).parent_path().empty() ? fs::path(".") : fs::path(cache_path).parent_path();
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) == 0) {
    const std::uint64_t avail = std::uint64_t(vfs.f_bavail) * std::uint64_t(vfs.f_frsize);
    if (avail < file_bytes + (std::uint64_t(256) << 20))
      return make_error(ErrorCode::io_error, dir.string() + ": the weights cache needs " + file_size_text(file_bytes) +
                                                 " and the disk has " + file_size_text(avail) + " free");
  }
  const std::string tmp = cache_path + ".tmp." + std::to_string(::getpid());
  Fd f;
  f.fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (f.fd < 0) return make_error(ErrorCode::io_error, tmp + ": cannot create: " + errno_text(errno));
  auto fail = [&](const Error& e) {
    ::unlink(tmp.c_str());
    return tl::unexpected(e);
  };
  unsigned char head[16];
  std::memcpy(head, kMagic, 8);
  const std::uint64_t len = text.size();
  std::memcpy(head + 8, &len, 8);
  Status s = write_all(f.fd, head, sizeof head, tmp);
  if (s) s = write_all(f.fd, text.data(), text.size(), tmp);
  if (s) s = write_zeros(f.fd, vectors_offset - 16 - text.size(), tmp);
  if (s) s = write_all(f.fd, p.memory.data(), vectors_bytes, tmp);
  if (s) s = write_zeros(f.fd, block_offset - vectors_offset - vectors_bytes, tmp);
  if (s) s = write_all(f.fd, p.packed->memory.get(), p.packed->bytes, tmp);
  // on disk before the rename: a crash must not leave a cache of the right size full of zeros
  if (s && ::fdatasync(f.fd) != 0) s = make_error(ErrorCode::io_error, tmp + ": cannot flush: " + errno_text(errno));
  if (!s) return fail(s.error());
  // The written pages leave the page cache (clean once flushed; a hint, its failure harmless):
  // the writes left them in large folios, which a later mapping maps whole on its first read,
  // so reading one row of the embedding brought about 1.3 MB of it into the process's memory
  // (GPT-2 small, Linux 6.18 on ext4). Read back through the mapping, only the pages around
  // the rows a run reads are in memory (bench/README.md: the activation cache's memory).
  ::posix_fadvise(f.fd, 0, 0, POSIX_FADV_DONTNEED);
  if (::close(f.fd) != 0) {
    f.fd = -1;
    return fail(Error{ErrorCode::io_error, tmp + ": cannot close: " + errno_text(errno)});
  }
  f.fd = -1;
  if (::rename(tmp.c_str(), cache_path.c_str()) != 0)
    return fail(Error{ErrorCode::io_error, cache_path + ": cannot rename the new cache into place: " + errno_text(errno)});
  return {};
}

}  // namespace headlab::model

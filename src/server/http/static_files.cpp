// server/http/static_files.cpp — canonicalise, check containment, read, label.
#include "server/http/static_files.h"

#include <fstream>
#include <sstream>

#include "server/http/errors.h"
#include "server/http/http_rules.h"

namespace headlab::server {
namespace fs = std::filesystem;

StaticFiles::StaticFiles(const std::string& root) {
  std::error_code ec;
  if (root.empty()) return;
  root_ = fs::canonical(root, ec);
  found_ = !ec && fs::is_regular_file(root_ / "index.html", ec);
}

std::string content_type_for(const fs::path& file) {
  const std::string ext = file.extension().string();
  if (ext == ".html") return "text/html; charset=utf-8";
  if (ext == ".js" || ext == ".mjs") return "text/javascript; charset=utf-8";
  if (ext == ".css") return "text/css; charset=utf-8";
  if (ext == ".svg") return "image/svg+xml";
  if (ext == ".png") return "image/png";
  if (ext == ".ico") return "image/x-icon";
  if (ext == ".json" || ext == ".map") return "application/json";
  if (ext == ".woff2") return "font/woff2";
  if (ext == ".txt") return "text/plain; charset=utf-8";
  return "application/octet-stream";
}

HttpResponse StaticFiles::serve(const std::string& path, const std::string& accept_encoding) const {
  HttpResponse not_found;
  not_found.status = 404;
  not_found.content_type = "text/plain; charset=utf-8";
  not_found.body = "Not found.\n";
  if (!found_ || path.empty() || path.front() != '/' || path.find('\0') != std::string::npos ||
      path.find('\\') != std::string::npos)
    return not_found;
  std::string relative = path.substr(1);
  if (relative.empty() || relative.back() == '/') relative += "index.html";
  std::error_code ec;
  fs::path resolved = fs::weakly_canonical(root_ / fs::path(relative), ec);
  if (ec) return not_found;
  // Containment after resolving "..", and symlinks: the file must be below root_.
  auto [root_end, unused] = std::mismatch(root_.begin(), root_.end(), resolved.begin(), resolved.end());
  if (root_end != root_.end() || resolved == root_) return not_found;
  if (!fs::is_regular_file(resolved, ec)) return not_found;
  HttpResponse r;
  r.content_type = content_type_for(resolved);
  // A precompressed sibling the client takes, else the file itself.
  fs::path chosen = resolved;
  bool has_sibling = false;
  for (const char* coding : {"br", "gzip"}) {
    fs::path sibling = resolved;
    sibling += std::string(".") + (std::string(coding) == "br" ? "br" : "gz");
    if (!fs::is_regular_file(sibling, ec)) continue;
    has_sibling = true;
    if (chosen == resolved && accepts_encoding(accept_encoding, coding)) {
      chosen = sibling;
      r.headers.push_back({"Content-Encoding", coding});
    }
  }
  if (has_sibling) r.headers.push_back({"Vary", "Accept-Encoding"});
  std::ifstream in(chosen, std::ios::binary);
  if (!in) return not_found;
  std::ostringstream body;
  body << in.rdbuf();
  r.body = body.str();
  // Vite fingerprints everything under assets/: cache it; always revalidate the rest.
  bool fingerprinted = relative.rfind("assets/", 0) == 0;
  r.headers.push_back({"Cache-Control", fingerprinted ? "public, max-age=31536000, immutable" : "no-cache"});
  return r;
}

}  // namespace headlab::server

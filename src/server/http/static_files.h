// server/http/static_files.h — serves the built web app from one folder and nothing outside it.
// A request path is decoded by the HTTP layer, then resolved (symlinks included) and must
// stay inside the folder: "..", "%2e%2e", absolute paths and links out all answer 404.
// Nothing is compressed here: the web build writes .br and .gz files (web/scripts/compress.mjs).
#pragma once

#include <filesystem>
#include <string>

#include "server/http/http_types.h"

namespace headlab::server {

class StaticFiles {
 public:
  // `root` must hold index.html; found() tells whether it does.
  explicit StaticFiles(const std::string& root);
  bool found() const { return found_; }
  // The file for a decoded URL path ("/", "/assets/app.js"), or 404. When the web build
  // left "app.js.br" or "app.js.gz" beside it and `accept_encoding` takes that coding, that
  // file is the body, labelled Content-Encoding (Brotli first); every answer for a file
  // that has such a sibling says Vary: Accept-Encoding.
  HttpResponse serve(const std::string& path, const std::string& accept_encoding = "") const;

 private:
  std::filesystem::path root_;  // canonical
  bool found_ = false;
};

// "text/javascript; charset=utf-8" for "app.js"; application/octet-stream when unknown.
std::string content_type_for(const std::filesystem::path& file);

}  // namespace headlab::server

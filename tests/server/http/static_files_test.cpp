// The web folder is the only place static files come from.
#include "server/http/static_files.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "testing/test_server.h"

using namespace headlab::server;
namespace fs = std::filesystem;

namespace {
// web/ with index.html and assets/app.js; a secret file beside it; a link out of it.
struct WebFolder {
  fs::path base = fs::path(headlab::testing::temp_path("web-root")).parent_path();
  fs::path web = base / "web";
  WebFolder() {
    fs::create_directories(web / "assets");
    std::ofstream(web / "index.html") << "<!doctype html><title>headlab</title>";
    std::ofstream(web / "assets" / "app.js") << "console.log(1)";
    std::ofstream(base / "secret.txt") << "secret";
    fs::create_symlink(base / "secret.txt", web / "link.txt");
    fs::create_directory_symlink(base, web / "up");
  }
};
}  // namespace

TEST(StaticFiles, ServesIndexForTheRootAndAssetsWithTheirTypes) {
  WebFolder f;
  StaticFiles files(f.web.string());
  ASSERT_TRUE(files.found());
  auto index = files.serve("/");
  EXPECT_EQ(index.status, 200);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  auto js = files.serve("/assets/app.js");
  EXPECT_EQ(js.status, 200);
  EXPECT_EQ(js.content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(js.body, "console.log(1)");
}

TEST(StaticFiles, NothingOutsideTheFolderIsServed) {
  WebFolder f;
  StaticFiles files(f.web.string());
  for (const std::string& path : std::vector<std::string>{"/../secret.txt", "/assets/../../secret.txt", "//etc/passwd", "/link.txt", "/up/secret.txt",
        "/assets/..\\..\\secret.txt", std::string("/index.html\0x", 13), "/nope.html", "relative.html"}) {
    auto r = files.serve(path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.body.find("secret"), std::string::npos) << path;
  }
}

TEST(StaticFiles, MissingFolderIsReportedNotServed) {
  StaticFiles files("/nonexistent/headlab/web");
  EXPECT_FALSE(files.found());
  EXPECT_EQ(files.serve("/").status, 404);
}

TEST(StaticFiles, EncodedDotsAreDecodedThenRefusedOverHttp) {
  WebFolder f;
  ServerOptions options;
  options.port = 0;
  options.db_path = headlab::testing::temp_path("s.db");
  options.web_dir = f.web.string();
  auto s = Server::create(options);
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->bind());
  std::thread t([&] { (*s)->listen(); });
  httplib::Client c("127.0.0.1", (*s)->port());
  for (int i = 0; i < 100 && !c.Get("/api/health"); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(c.Get("/")->status, 200);
  for (const char* path : {"/%2e%2e/secret.txt", "/assets/%2E%2E/%2e%2e/secret.txt", "/..%2fsecret.txt", "/up/secret.txt"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_NE(r->status, 200) << path;
    EXPECT_EQ(r->body.find("secret"), std::string::npos) << path;
  }
  (*s)->stop();
  t.join();
}

TEST(StaticFiles, APrecompressedSiblingIsServedWhenTheClientTakesIt) {
  WebFolder f;
  std::ofstream(f.web / "assets" / "app.js.br") << "BROTLI";
  std::ofstream(f.web / "assets" / "app.js.gz") << "GZIP";
  StaticFiles files(f.web.string());
  auto br = files.serve("/assets/app.js", "gzip, deflate, br");
  EXPECT_EQ(br.body, "BROTLI");
  EXPECT_EQ(br.content_type, "text/javascript; charset=utf-8");  // the type of what it decodes to
  auto has = [](const HttpResponse& r, const std::string& k, const std::string& v) {
    for (const auto& h : r.headers)
      if (h.first == k && h.second == v) return true;
    return false;
  };
  EXPECT_TRUE(has(br, "Content-Encoding", "br"));
  EXPECT_TRUE(has(br, "Vary", "Accept-Encoding"));
  auto gz = files.serve("/assets/app.js", "gzip");
  EXPECT_EQ(gz.body, "GZIP");
  EXPECT_TRUE(has(gz, "Content-Encoding", "gzip"));
  auto plain = files.serve("/assets/app.js", "");
  EXPECT_EQ(plain.body, "console.log(1)");
  EXPECT_TRUE(has(plain, "Vary", "Accept-Encoding"));
  EXPECT_FALSE(has(plain, "Content-Encoding", "br"));
}

TEST(StaticFiles, OneRangeIsServedAndManyRangesAreNotAmplified) {
  WebFolder f;
  std::ofstream(f.web / "assets" / "big.js") << std::string(100000, 'x');
  ServerOptions options;
  options.port = 0;
  options.db_path = headlab::testing::temp_path("s.db");
  options.web_dir = f.web.string();
  auto s = Server::create(options);
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->bind());
  std::thread t([&] { (*s)->listen(); });
  const int port = (*s)->port();
  auto ask = [&](const std::string& range) {
    return headlab::testing::raw_exchange(port, "GET /assets/big.js HTTP/1.1\r\nHost: 127.0.0.1\r\nRange: " + range +
                                                    "\r\nConnection: close\r\n\r\n");
  };
  std::string one = ask("bytes=10-19");
  EXPECT_EQ(headlab::testing::raw_status(one), 206) << one.substr(0, 300);
  EXPECT_NE(one.find("Content-Range: bytes 10-19/100000"), std::string::npos) << one.substr(0, 300);
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 2600; ++i) ranges += ",0-";
  std::string many = ask(ranges);
  EXPECT_EQ(headlab::testing::raw_status(many), 200) << many.substr(0, 300);
  EXPECT_LT(many.size(), 101000u) << "the answer is the file once, never a multipart of copies";
  EXPECT_EQ(many.find("multipart"), std::string::npos);
  EXPECT_EQ(headlab::testing::raw_status(ask("bytes=200000-")), 416);
  (*s)->stop();
  t.join();
}

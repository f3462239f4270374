// The web folder is the only place static files come from.
#include "server/static_files.h"

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

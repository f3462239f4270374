// `headlab class create|show|list|delete` on the database file the server uses: the CLI
// and the API give the same view.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include <sqlite3.h>

#include "server/store/class_store.h"
#include "server/store/store_testing.h"
#include "testing/process.h"
#include "testing/test_server.h"
#include "util/untrusted_text.h"

using headlab::testing::headlab_run;
using headlab::testing::temp_path;
using headlab::testing::TestServer;
using nlohmann::json;

namespace {

std::string code_in(const std::string& out) {
  std::smatch m;
  return std::regex_search(out, m, std::regex("Join code:  ([A-Z0-9]{6})")) ? m[1].str() : "";
}

}  // namespace

TEST(ClassCli, CreatePrintsTheJoinLinkTheCodeAndTheSecretOnce) {
  std::string db = temp_path("cli.db");
  auto r = headlab_run("class create \"Period 3\" --db " + db + " --url http://10.0.0.5:8080/");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::string code = code_in(r.out);
  ASSERT_EQ(code.size(), 6u) << r.out;
  EXPECT_NE(r.out.find("Join link:  http://10.0.0.5:8080/#/join/" + code), std::string::npos) << r.out;
  std::smatch m;
  std::string out = r.out;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("Secret:     ([A-Z0-9-]{23})"))) << r.out;
  auto store = headlab::server::ClassStore::open(db);
  EXPECT_TRUE(*(*store)->verify_teacher(code, m[1].str()));
  EXPECT_EQ(headlab_run("class list --db " + db).out.find(m[1].str()), std::string::npos);  // never again
}

TEST(ClassCli, CreateTakesAPassphraseFromAFile) {
  std::string db = temp_path("cli.db"), pass = temp_path("pass.txt");
  std::ofstream(pass) << "correct horse battery\n";
  auto r = headlab_run("class create \"Period 3\" --db " + db + " --passphrase-file " + pass);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("Secret:"), std::string::npos);
  auto store = headlab::server::ClassStore::open(db);
  EXPECT_TRUE(*(*store)->verify_teacher(code_in(r.out), "correct horse battery"));
  std::ofstream(pass) << "short\n";
  auto bad = headlab_run("class create \"Period 3\" --db " + db + " --passphrase-file " + pass);
  EXPECT_EQ(bad.exit_code, 2) << bad.out;
  EXPECT_NE(bad.out.find("headlab: error: A passphrase is 10 to 200 bytes"), std::string::npos) << bad.out;
}

TEST(ClassCli, ShowGivesTheSameViewAsTheApi) {
  std::string db = temp_path("cli.db");
  std::string code = code_in(headlab_run("class create \"Period 3\" --db " + db).out);
  {
    TestServer s(db);
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0001"}, {"nickname", "Ada"}});
    s.post("/api/lessons/trained-heads/check",
           json{{"learner", "learner-0001"}, {"challenge", "pattern-quiz"}, {"answer", {{"choice", "uniform"}}}});
    s.post("/api/lessons/trained-heads/check",
           json{{"learner", "learner-0001"}, {"challenge", "pattern-quiz"}, {"answer", {{"choice", "below-diagonal"}}}});
  }
  auto as_json = headlab_run("class show " + code + " --db " + db + " --format json");
  ASSERT_EQ(as_json.exit_code, 0) << as_json.out;
  json v = json::parse(as_json.out);
  EXPECT_EQ(v["learners"][0]["nickname"], "Ada");
  EXPECT_EQ(v["learners"][0]["lessons"][1]["challenges"][0], (json{{"challenge", "pattern-quiz"}, {"done", true},
                                                                  {"done_at", v["learners"][0]["lessons"][1]["challenges"][0]["done_at"]},
                                                                  {"tries", 2}, {"before_joining", false},
                                                                  {"revealed_at", nullptr}}));
  EXPECT_EQ(v["learners"][0]["total"], 1);
  auto text = headlab_run("class show " + code + " --db " + db);
  EXPECT_NE(text.out.find("Ada"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("\u27132"), std::string::npos) << text.out;  // done in 2 tries
  EXPECT_NE(text.out.find("The previous-token pattern: 1 of 1 done; common wrong answers: an even spread (1)"),
            std::string::npos)
      << text.out;
  auto csv = headlab_run("class show " + code + " --db " + db + " --format csv");
  EXPECT_EQ(csv.out.rfind("\xEF\xBB\xBFnickname,", 0), 0u) << csv.out;  // the UTF-8 byte order mark first
  EXPECT_NE(csv.out.find("Ada,trained-heads,pattern-quiz,The previous-token pattern,yes,"), std::string::npos) << csv.out;
}

// The text grid carries the marks the JSON and CSV carry: "!" after a cell whose answer the
// learner was shown, "+" after one done before joining the class.
TEST(ClassCli, ShowMarksAnAnswerShownAndAPassMadeBeforeJoining) {
  std::string db = temp_path("cli.db");
  std::string code = code_in(headlab_run("class create \"Period 3\" --db " + db).out);
  {
    TestServer s(db);
    // Bea passes the quiz on her own, then joins: the pass is carried over and marked.
    s.post("/api/lessons/trained-heads/check",
           json{{"learner", "learner-0002"}, {"challenge", "pattern-quiz"}, {"answer", {{"choice", "below-diagonal"}}}});
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0001"}, {"nickname", "Ada"}});
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0002"}, {"nickname", "Bea"}});
    // Ada asks to see the answer, then sends it: never credited, marked.
    s.post("/api/lessons/trained-heads/check", json{{"learner", "learner-0001"}, {"challenge", "pattern-quiz"},
                                                   {"answer", {{"choice", "below-diagonal"}, {"revealed", true}}}});
  }
  auto text = headlab_run("class show " + code + " --db " + db);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  std::string ada, bea;
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Ada", 0) == 0) ada = line;
    if (line.rfind("Bea", 0) == 0) bea = line;
  }
  EXPECT_NE(ada.find("\u27171!"), std::string::npos) << text.out;  // one try, not done, answer shown
  EXPECT_NE(bea.find("+"), std::string::npos) << text.out;
  EXPECT_EQ(ada.find("+"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("! the answer was shown   + done before joining"), std::string::npos) << text.out;
}

// The grid's columns line up whatever the nicknames are made of: a wide character takes two
// columns of a terminal, a combining accent none.
TEST(ClassCli, ShowAlignsTheGridForWideCharactersAndCombiningMarks) {
  std::string db = temp_path("cli.db");
  std::string code = code_in(headlab_run("class create \"Period 3\" --db " + db).out);
  {
    TestServer s(db);
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0001"}, {"nickname", "Ada"}});
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0002"}, {"nickname", "\u5B66\u751F\u3055\u3093"}});
    s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0003"}, {"nickname", "Zoe\u0308"}});
  }
  auto text = headlab_run("class show " + code + " --db " + db);
  ASSERT_EQ(text.exit_code, 0) << text.out;
  // Each learner's row: the column its first mark starts at, counted in terminal columns.
  std::vector<std::size_t> starts;
  std::istringstream lines(text.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("Ada", 0) != 0 && line.rfind("\u5B66", 0) != 0 && line.rfind("Zo", 0) != 0) continue;
    std::size_t mark = line.find("\u00b7");
    ASSERT_NE(mark, std::string::npos) << line;
    starts.push_back(headlab::display_width(line.substr(0, mark)));
  }
  ASSERT_EQ(starts.size(), 3u) << text.out;
  EXPECT_EQ(starts[0], starts[1]) << text.out;
  EXPECT_EQ(starts[0], starts[2]) << text.out;
}

// Rows written before the server refused such text (or by anyone who can write the file):
// no escape sequence or direction control of a learner reaches the teacher's terminal.
TEST(ClassCli, ShowAndListEscapeControlCharactersInWhatLearnersWrote) {
  std::string db = temp_path("cli.db");
  std::string code = code_in(headlab_run("class create \"Period 3\" --db " + db).out);
  {
    auto store = headlab::server::ClassStore::open(db);
    ASSERT_TRUE(store);
    ASSERT_TRUE((*store)->join(code, "learner-0001", "Ada"));
    ASSERT_TRUE((*store)->record_attempt("learner-0001", "trained-heads", "pattern-quiz", false,
                                         "\xC2\x9B" "2J\x1b[31m\xE2\x80\xAE" "x"));
  }
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h,
                         "UPDATE class_members SET nickname = 'A' || char(27) || '[2J' || char(155) || char(8238) || 'da';"
                         "UPDATE classes SET name = 'P' || char(155) || '3'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(h);
  for (const std::string& command : {"class show " + code, "class show " + code + " --format json",
                                     "class show " + code + " --format csv", std::string("class list")}) {
    auto r = headlab_run(command + " --db " + db);
    ASSERT_EQ(r.exit_code, 0) << command << ": " << r.out;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << command << ": " << r.out;
    EXPECT_EQ(r.out.find("\xC2\x9B"), std::string::npos) << command << ": " << r.out;
    EXPECT_EQ(r.out.find("\xE2\x80\xAE"), std::string::npos) << command << ": " << r.out;
    EXPECT_NE(r.out.find("\xEF\xBF\xBD"), std::string::npos) << command << ": the replacement shows where";
  }
}

TEST(ClassCli, DeleteAsksForYesThenDeletesEverything) {
  std::string db = temp_path("cli.db");
  std::string code = code_in(headlab_run("class create \"Period 3\" --db " + db).out);
  auto asked = headlab_run("class delete " + code + " --db " + db);
  EXPECT_EQ(asked.exit_code, 2);
  EXPECT_NE(asked.out.find("--yes"), std::string::npos) << asked.out;
  std::string lower = code;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto done = headlab_run("class delete " + lower + " --db " + db + " --yes");
  EXPECT_EQ(done.exit_code, 0) << done.out;
  auto again = headlab_run("class show " + code + " --db " + db);
  EXPECT_EQ(again.exit_code, 1);
  EXPECT_NE(again.out.find("No class has the code"), std::string::npos) << again.out;
}

TEST(ClassCli, ShowRefusesADatabaseThatIsNotThere) {
  auto r = headlab_run("class show ABCDEF --db " + temp_path("none.db"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.out.find("No database at"), std::string::npos) << r.out;
}

// The --db of every command that takes one: a text that only looks like a PostgreSQL URL is
// refused by name (a usage error) and never becomes a folder named "postgresql:".
TEST(ClassCli, EveryDbOptionRefusesAMistypedPostgresUrlAndMakesNoFolder) {
  const std::filesystem::path dir = std::filesystem::path(temp_path("x")).parent_path();
  for (const char* command : {"class create \"Period 3\"", "class list", "class show ABCDEF", "class delete ABCDEF --yes",
                              "feedback list", "serve --no-model --port 0 --web /nonexistent"})
    for (const char* url : {"postgresql:/headlab@127.0.0.1:5432/headlab", "PostgreSQL://headlab@127.0.0.1:5432/headlab"}) {
      auto r = headlab::testing::command_run("cd '" + dir.string() + "' && " HEADLAB_BINARY_DIR "/headlab " + command +
                                             " --db '" + url + "' 2>&1");
      EXPECT_EQ(r.exit_code, 2) << command << " --db " << url << ": " << r.out;
      EXPECT_NE(r.out.find("looks like a PostgreSQL URL"), std::string::npos) << command << ": " << r.out;
    }
  EXPECT_TRUE(std::filesystem::is_empty(dir)) << "something was made in " << dir;
}

TEST(ClassCli, CreateShowListAndDeleteWorkOnPostgreSQL) {
  headlab::testing::StoreDatabase fresh(headlab::server::db::Engine::postgresql);
  HEADLAB_REQUIRE_DATABASE(fresh);
  const std::string db = "'" + fresh.target() + "'";
  auto made = headlab_run("class create \"Period 3\" --db " + db);
  ASSERT_EQ(made.exit_code, 0) << made.out;
  const std::string code = code_in(made.out);
  ASSERT_EQ(code.size(), 6u) << made.out;
  {
    TestServer s(fresh.target());
    ASSERT_EQ(s.post("/api/class/join", json{{"code", code}, {"learner", "learner-0001"}, {"nickname", "Ada"}}).status, 200);
  }
  auto list = headlab_run("class list --db " + db);
  EXPECT_NE(list.out.find(code + "  Period 3  (1 learner,"), std::string::npos) << list.out;
  auto shown = headlab_run("class show " + code + " --format csv --db " + db);
  EXPECT_NE(shown.out.find("Ada,causal-mask,"), std::string::npos) << shown.out;
  EXPECT_EQ(headlab_run("class delete " + code + " --yes --db " + db).exit_code, 0);
  auto empty = headlab_run("class list --db " + db);
  EXPECT_NE(empty.out.find("No classes in postgresql://"), std::string::npos) << empty.out;
}

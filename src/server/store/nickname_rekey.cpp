// server/store/nickname_rekey.cpp — see nickname_rekey.h. The new keys are worked out for a
// whole class in join order first, then written in two passes (each changed row to a key of
// its own learner's, then to its new key), so no intermediate state breaks the unique
// (class_code, nickname_key).
#include "server/store/nickname_rekey.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "server/store/database.h"
#include "util/untrusted_text.h"

namespace headlab::server {

namespace {

struct Member {
  std::string learner, code, nickname, key;
};

// Whether `key` is `want` itself or `want` marked: a key settled already.
bool settled(const std::string& key, const std::string& want) {
  return key == want || (key.size() > want.size() + 1 && key.compare(0, want.size(), want) == 0 &&
                         key[want.size()] == kMarkedKey);
}

}  // namespace

Result<NicknameRekey> rekey_nicknames(db::Database& db) {
  // A look first, outside any write: every start reads the members, only an old database writes.
  auto look = db.query("SELECT nickname, nickname_key FROM class_members UNION ALL "
                       "SELECT nickname, nickname_key FROM class_bans");
  if (!look) return tl::unexpected(look.error());
  bool stale = false;
  for (const db::Row& row : *look)
    if (!settled(row.text(1), nickname_key(row.text(0)))) stale = true;
  if (!stale) return NicknameRekey{};

  NicknameRekey done;
  Status s = db.transaction(db::Access::write, [&](db::Session& tx) -> Status {
    done = NicknameRekey{};
    if (db.engine() == db::Engine::postgresql)  // one server at a time
      if (auto r = tx.query("SELECT pg_advisory_xact_lock(hashtext('headlab nickname rekey'))"); !r)
        return tl::unexpected(r.error());
    auto rows = tx.query(
        "SELECT learner, class_code, nickname, nickname_key FROM class_members ORDER BY class_code, joined_at, learner");
    if (!rows) return tl::unexpected(rows.error());
    std::vector<Member> changed;  // with their new keys
    std::map<std::string, std::set<std::string>> taken;  // by class: the keys given so far
    for (const db::Row& row : *rows) {
      Member m{row.text(0), row.text(1), row.text(2), row.text(3)};
      const std::string want = nickname_key(m.nickname);
      std::set<std::string>& keys = taken[m.code];
      std::string key = settled(m.key, want) && !keys.count(m.key) ? m.key : want;
      for (int n = 1; keys.count(key); ++n) key = want + kMarkedKey + std::to_string(n);
      keys.insert(key);
      if (key != m.key) {
        if (key != want) ++done.marked;
        m.key = key;
        changed.push_back(std::move(m));
      }
    }
    for (const Member& m : changed)
      if (auto r = tx.exec("UPDATE class_members SET nickname_key = $1 WHERE learner = $2",
                           {std::string(1, kMarkedKey) + "rekey " + m.learner, m.learner});
          !r)
        return tl::unexpected(r.error());
    for (const Member& m : changed)
      if (auto r = tx.exec("UPDATE class_members SET nickname_key = $1 WHERE learner = $2", {m.key, m.learner}); !r)
        return tl::unexpected(r.error());
    done.rekeyed = static_cast<int>(changed.size());

    auto bans = tx.query("SELECT class_code, learner, nickname, nickname_key FROM class_bans");
    if (!bans) return tl::unexpected(bans.error());
    for (const db::Row& row : *bans) {
      const std::string want = nickname_key(row.text(2));
      if (row.text(3) == want) continue;
      if (auto r = tx.exec("UPDATE class_bans SET nickname_key = $1 WHERE class_code = $2 AND learner = $3",
                           {want, row.text(0), row.text(1)});
          !r)
        return tl::unexpected(r.error());
      ++done.bans;
    }
    return {};
  });
  if (!s) return tl::unexpected(s.error());
  return done;
}

}  // namespace headlab::server

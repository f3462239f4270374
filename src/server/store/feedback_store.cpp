// server/store/feedback_store.cpp — one table (server/store/schema.cpp), one transaction per note.
#include "server/store/feedback_store.h"

#include "server/store/database.h"
#include "server/store/schema.h"

namespace headlab::server {

FeedbackStore::FeedbackStore(std::unique_ptr<db::Database> db) : db_(std::move(db)) {}
FeedbackStore::~FeedbackStore() = default;

Result<std::unique_ptr<FeedbackStore>> FeedbackStore::open(const std::string& path, std::int64_t max_bytes) {
  auto db = db::Database::open(path, {.what = "feedback database"});
  if (!db) return tl::unexpected(db.error());
  if (auto s = db::migrate(**db, db::headlab_migrations()); !s)
    return make_error(s.error().code, s.error().message + " It cannot hold feedback.");
  if (auto s = (*db)->cap_size(max_bytes); !s) return tl::unexpected(s.error());
  return std::unique_ptr<FeedbackStore>(new FeedbackStore(std::move(*db)));
}

bool is_only_white_space(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto b = static_cast<unsigned char>(text[i]);
    std::uint32_t cp = b;
    int extra = b < 0x80 ? 0 : (b >> 5) == 6 ? 1 : (b >> 4) == 14 ? 2 : (b >> 3) == 30 ? 3 : -1;
    if (extra < 0 || i + extra >= text.size() + 1 - (extra > 0)) return false;  // not UTF-8: not space
    if (extra > 0) {
      cp = b & (0x3F >> extra);
      for (int k = 1; k <= extra; ++k) cp = (cp << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    }
    i += extra + 1;
    const bool space = (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
                       (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F ||
                       cp == 0x205F || cp == 0x3000;
    if (!space) return false;
  }
  return true;
}

Status FeedbackStore::check(const Feedback& f) {
  // SQLite would keep only the text before a NUL: refuse it rather than store less than was sent.
  for (const std::string* field : {&f.lesson, &f.message, &f.contact})
    if (field->find('\0') != std::string::npos)
      return make_error(ErrorCode::invalid_argument, "The note contains a NUL character (\\u0000); remove it.");
  if (is_only_white_space(f.message))
    return make_error(ErrorCode::invalid_argument, "The message is empty. Say what is wrong.");
  return {};
}

Result<std::int64_t> FeedbackStore::add(const Feedback& f) {
  if (Status s = check(f); !s) return tl::unexpected(s.error());
  std::int64_t id = 0;
  auto rows = db_->transaction(db::Access::grow, [&](db::Session& tx) -> Status {
    auto r = tx.query("INSERT INTO feedback (lesson, message, contact) VALUES ($1, $2, $3) RETURNING id",
                      {f.lesson, f.message, f.contact});
    if (!r) return tl::unexpected(r.error());
    id = r->at(0).integer(0);
    return {};
  });
  if (!rows) {
    if (rows.error().code == ErrorCode::storage_full)
      return make_error(ErrorCode::storage_full,
                        "The database " + db_->name() + " is full, so feedback cannot be saved now.");
    return make_error(rows.error().code, "Could not save feedback in " + db_->name() + ": " + rows.error().message + ".");
  }
  return id;
}

Result<std::vector<Feedback>> FeedbackStore::list(int limit) {
  auto rows = db_->query("SELECT id, lesson, message, contact, created_at FROM feedback ORDER BY id DESC LIMIT $1",
                         {std::int64_t{limit}});
  if (!rows)
    return make_error(rows.error().code, "Could not read feedback from " + db_->name() + ": " + rows.error().message + ".");
  std::vector<Feedback> out;
  out.reserve(rows->size());
  for (const db::Row& row : *rows) {
    Feedback f;
    f.id = row.integer(0);
    f.lesson = row.text(1);
    f.message = row.text(2);
    f.contact = row.text(3);
    f.created_at = row.text(4);
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace headlab::server

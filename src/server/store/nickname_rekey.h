// server/store/nickname_rekey.h — nickname keys stored before keys were NFKC case-folded (the
// trimmed text in ASCII lower case) recomputed with today's nickname_key (util/untrusted_text.h),
// so a new join cannot take a name a member already has ("Ａｄａ" stored as "ａｄａ" beside a
// new "Ada"). ClassStore::open runs it after the migrations; a database whose keys are all
// current is only read.
//
// Two members of one class whose new keys are the same both stay, with their attempts: the
// first to have joined gets the key, each later one the key marked with "\x1f" and a number
// ("ada\x1f" "1"), which no join can produce (a nickname holds no control character), so
// the name stays taken. A removal by that name takes the first, then the next.
// The bans' keys (class_bans) are recomputed the same way (a ban has no unique key).
//
//   auto done = rekey_nicknames(*db);  // {.rekeyed = 2, .marked = 1}
#pragma once

#include "util/result.h"

namespace headlab::server {

namespace db {
class Database;
}

struct NicknameRekey {
  int rekeyed = 0;  // members whose key changed (marked ones included)
  int marked = 0;   // of them, keys marked: a class had that name already
  int bans = 0;     // bans whose key changed
};

// Errors: the database's. On PostgreSQL two servers opening at once take turns (an advisory
// lock); the second finds nothing to do.
Result<NicknameRekey> rekey_nicknames(db::Database& db);

// The character a marked key carries after the nickname's own key.
inline constexpr char kMarkedKey = '\x1f';

}  // namespace headlab::server

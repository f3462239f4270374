// util/untrusted_text.h — text that came from someone else (a learner's nickname, an answer)
// on its way into a store and out to a terminal or a spreadsheet. Two jobs, one place:
//
//   std::cout << escape_controls(nickname);              // a terminal: no escape sequences
//   auto n = clean_nickname("  Ada ");                    // n->text "Ada", n->key "ada"
//   if (!n) return tl::unexpected(n.error());            // "U+200B (a zero-width ...) ..."
//
// Contracts:
// - escape_controls never fails: C0 and C1 controls (ESC, U+009B CSI), DEL, the
//   bidirectional controls (U+061C, U+200E/F, U+202A-202E, U+2066-2069) and bytes that are
//   not UTF-8 each become U+FFFD; the bytes of `keep` (e.g. "\t\r\n" inside a quoted CSV
//   cell) stay. Everything else passes unchanged.
// - clean_nickname: NFKC (so "Ａｄａ" is "Ada"), trimmed; refuses an empty one, one over
//   `max_chars` characters, invisible characters (controls, zero-width U+200B-200D, U+2060,
//   U+FEFF, bidi marks and every other format character, Hangul fillers), and one that mixes
//   Latin, Cyrillic or Greek letters ("Аda" with a Cyrillic А could pass for "Ada"). The
//   error (invalid_argument) names the character and says why.
// - nickname_key: NFKC with case folding of the trimmed text; two nicknames are the same
//   name when their keys are equal. Never fails (for looking up names stored before).
// - check_shown_text: for a name others will read that is not a nickname (a class's): refuses
//   bytes that are not UTF-8 and the bidirectional controls (which reorder the text around them
//   on every page that shows it), naming the code point; emoji and other alphabets stay.
// - display_width: the columns a terminal gives the text (utf8proc's character width: 2 for
//   East Asian wide characters and most emoji, 0 for combining marks); an invalid byte
//   counts 1, as escape_controls's U+FFFD does. For aligning tables of learners' names.
#pragma once

#include <string>
#include <string_view>

#include "util/result.h"

namespace headlab {

std::string escape_controls(std::string_view s, std::string_view keep = "");

struct CleanNickname {
  std::string text;  // NFKC, trimmed: what is stored and shown
  std::string key;   // NFKC case-folded: what uniqueness compares
};

Result<CleanNickname> clean_nickname(std::string_view raw, int max_chars = 24);
std::string nickname_key(std::string_view raw);
// `what` starts the message: "The class name".
Status check_shown_text(std::string_view s, const std::string& what);
std::size_t display_width(std::string_view s);
// What learners typed, made safe for a terminal and still readable as evidence: control
// characters become visible escapes (\x1b, \n, \u009b for C1), as do the bidirectional
// controls (\u202e), so a note cannot clear the screen, move the cursor, reorder the text
// after it or forge a line that looks like another entry; a backslash is doubled. Printable
// UTF-8 stays as it is, and a byte that is not UTF-8 passes as it is.
std::string escape_for_terminal(std::string_view text);

}  // namespace headlab

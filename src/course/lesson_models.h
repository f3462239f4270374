// course/lesson_models.h — the word-order lesson's models, loaded by name from
// one folder (`headlab serve --models-dir`, default the built-in model's parent, models/)
// on first use and kept: three small models headlab trained without positions, with
// learned ones and with rotary ones.
//
//   LessonModelShelf shelf("models");
//   auto m = shelf.get("headlab-rope");        // loads models/headlab-rope once
//   if (!m) return tl::unexpected(m.error());  // not_found says where it looked
//   std::lock_guard lock((*m)->mutex);          // one run at a time per model
//   model::forward((*m)->params, ids, opt, out, (*m)->workspace);
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "analysis/scanner.h"
#include "course/word_order.h"
#include "tokenizer/bpe_tokenizer.h"
#include "model/forward.h"
#include "model/parameters.h"
#include "util/result.h"

namespace headlab::course {

struct LessonModelEntry {
  std::string name;             // the folder's name
  std::string positions;        // "learned", "rotary" or "none"
  int n_ctx = 0;                // the config's n_ctx: learned positions have this many rows
  int trained_context = 0;      // T the trainer used (train_log.json's options.context; else n_ctx)
  int run_limit = 0;            // the longest input served: n_ctx for learned positions; up to
                                // 4 x trained_context (at most 1024) for rotary and none, which have no table to run out of
  model::Parameters params;
  std::optional<model::BpeTokenizer> tokenizer;
  std::string heldout;                       // heldout.txt, empty when missing
  std::optional<analysis::ScanReport> scan;  // the scanner's report, made on first use
  // with it: the best previous-token head's share on the token before, by query position,
  // on the scanner's natural windows (course::previous_token_shares)
  std::vector<course::PreviousTokenShare> previous_by_position;

  std::mutex mutex;  // guards workspace and scan
  model::Workspace workspace;
};

class LessonModelShelf {
 public:
  explicit LessonModelShelf(std::string dir) : dir_(std::move(dir)) {}
  const std::string& dir() const { return dir_; }

  // Errors: invalid_argument (a name that is not a plain folder name), not_found (no
  // config.json there, saying where it looked), the checkpoint's and tokenizer's errors.
  Result<std::shared_ptr<LessonModelEntry>> get(const std::string& name);

 private:
  std::string dir_;
  std::mutex mutex_;
  std::map<std::string, std::shared_ptr<LessonModelEntry>> loaded_;
};

}  // namespace headlab::course

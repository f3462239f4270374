// server/api/api_types.h — typed requests and responses of the JSON API (docs/api.md).
// json_codec turns bodies into these and these into bodies; handlers see only these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/attention_pattern.h"
#include "core/head_split.h"

namespace headlab::server {

struct WeightsRequest {
  std::string sentence;
  std::string head;
  bool mask = true;
};

struct HeadSplitRequest {
  std::int64_t d_model = 512;
  std::int64_t h = 8;
};

struct ProgressQuery {
  std::string learner;
  std::string lesson;
};

struct ProgressCheckRequest {
  std::string learner;
  std::string lesson;
  std::string sentence;
  std::string head;
  bool mask = true;
  std::int64_t query = 0;
};

struct ChallengeStatus {
  std::string id;
  std::string text;
  bool done = false;
};

struct ProgressView {
  std::string lesson;
  std::string learner;
  std::vector<ChallengeStatus> challenges;
  std::vector<std::string> newly_completed;  // only filled by /api/progress/check
  // /api/progress/check: every challenge this check met, new or done before (not sent: it
  // is what a class member's teacher is told, see note_detected).
  std::vector<std::string> met;
  std::vector<std::string> met_why;  // met[i]'s check explanation, in numbers (for the teacher)
  bool include_newly_completed = false;
};

struct Program {
  std::string id;        // "numpy", "cpp"
  std::string language;  // "Python with NumPy"
  std::string source;
  std::string output;    // what it printed when headlab built and ran it
};

}  // namespace headlab::server

// course/word_order.h — lesson 3, "Encoding word order and RoPE" (named lesson 7 in the
// original course). Its three challenges are answers checked on the learner's own evidence:
//   shuffle-follows  the learner shuffles the tokens of their text and, before the new
//                    pattern is shown, picks where one token now looks most under a
//                    content-only head (no positions, no mask): met when the pick is the
//                    row's largest weight in the shuffled text. The row moves with its word.
//                    Preconditions: 4 tokens, some moved, the row has a clear favourite word
//                    (kShuffleFavouriteOverEven, kShuffleLead), and that word left its place.
//   wpe-neighbour    the learner picks a position p of the model's learned wpe and guesses
//                    the other position whose vector is most like p's (cosine): met when
//                    the guess is that position.
//   offset-only      the learner picks two pairs (m, n) at least kOffsetSpread apart in m
//                    with the same offset m - n whose q.k, after the engine's rotary code,
//                    agree to 1e-4.
// Each check is a pure function of its evidence; check_word_order_answer gathers it through
// a LessonModel (or analysis::rope_dots) and calls it. A wrong answer is told how far off it
// is, never the answer (it could be retyped). An answer sent with "revealed" (or whose
// challenge the server remembers revealing) is explained with the answer but never met; a
// revealed shuffle or neighbour answer may leave out the pick ('positions' of one number).
#pragma once

#include <string>
#include <vector>

#include "analysis/head_scores.h"
#include "course/lesson.h"

namespace headlab::course {

inline constexpr const char* kWordOrderLesson = "word-order";
inline constexpr int kMinShuffleTokens = 4;  // fewer tokens make too small a shuffle to watch
inline constexpr int kOffsetSpread = 10;     // the two pairs' m must differ at least this much
inline constexpr double kSameDot = 1e-4;     // q.k agree when they differ by less (relative to max(1, |q.k|))
// A shuffle tells something only when the followed row has a clear favourite word: at least
// this many times an even spread's share (1/T), and this much more than any other word.
inline constexpr double kShuffleFavouriteOverEven = 1.5;
inline constexpr double kShuffleLead = 0.02;
// Two learned positions whose cosines with the asked one differ by less are a tie.
inline constexpr double kNeighbourTie = 1e-4;

struct ShuffleEvidence {
  int head = 0;                     // layer 0's head
  std::vector<std::string> tokens;  // (T) the text's tokens, in the learner's order before the shuffle
  std::vector<int> order;           // (T) the shuffle: token i of the shuffled text is tokens[order[i]]
  std::vector<float> before;        // (T, T) content-only pattern of the text
  std::vector<float> after;         // (T, T) the same head on the shuffled text
  int query = -1, key = -1;         // in the shuffled text: the token, and where the learner says it looks most
                                    // (-1: no pick, the learner asked to see the answer)
};

struct NeighbourEvidence {
  int position = -1, guess = -1;  // guess -1: no guess, the learner asked to see the answer
  int N = 0;
  std::vector<float> cosine;  // (N, N) the learned wpe's similarity
};

// The q and k the lesson rotates (HS = 64): fixed, so the page and the check agree.
const std::vector<float>& word_order_q();
const std::vector<float>& word_order_k();
inline constexpr float kWordOrderTheta = 10000.0f;

// The three models part 4 compares, as the page asks for them by name from the server's
// models folder: the same data and budget, only the positions differ.
struct WordOrderModel {
  const char* positions;  // "none", "learned", "rotary"
  const char* name;       // the folder in the models folder
  const char* title;      // as the page heads its column
};
const std::vector<WordOrderModel>& word_order_models();

// How much a head looks at the token just before, by where the query sits: the scanner's
// previous-token measure (analysis/head_scores.h: mean p[q][q-1], q >= 2, so the token before
// is never BOS) over the queries from <= q < to of every pattern given, beside what an even
// spread over keys 0..q gives (mean 1/(q + 1)). Part 4 shows it per band: a model without
// positions can tell its neighbours apart near the start, where the causal mask's signal
// (a query at q averages q + 1 keys) changes most from one position to the next.
struct PreviousTokenShare {
  int from = 2, to = 0;
  int queries = 0;  // rows counted over all patterns; share and chance are 0 without any
  double share = 0.0, chance = 0.0;
};
// Bands 2-7, 8-31 and 32 to context - 1, cut to the context.
std::vector<std::pair<int, int>> previous_token_bands(int context);
// patterns: each (T, T) row-major, BOS first. One share per band, in order.
std::vector<PreviousTokenShare> previous_token_shares(const std::vector<analysis::PatternView>& patterns,
                                                     const std::vector<std::pair<int, int>>& bands);

struct OffsetEvidence {
  int m1 = 0, n1 = 0, m2 = 0, n2 = 0;
  double dot1 = 0.0, dot2 = 0.0;  // q_m . k_n after the rotary, for each pair
};

Verdict check_shuffle_follows(const ShuffleEvidence& e);
Verdict check_wpe_neighbour(const NeighbourEvidence& e);
Verdict check_offset_only(const OffsetEvidence& e);

// The AnswerCheck of the lesson (see course/lesson.h for the errors).
Result<Verdict> check_word_order_answer(const Answer& answer, LessonModel* model);

Lesson word_order_lesson();

}  // namespace headlab::course

// train/train_log.h — the training log: one row every log_every steps, with the held-out
// loss and the scanner's best head scores on evaluation steps. Its one writer and reader
// of train_log.csv and of the "log" rows of train_log.json (docs/formats.md).
//
//   std::string csv = train_log_csv(session.log);                       // the trainer writes
//   Result<TrainLogTable> t = train_log_table_parse(text, "train_log.csv");  // the server reads
//   Result<std::vector<TrainLogRecord>> rows = train_log_records(*t, "train_log.csv");  // the plot
#pragma once

#include <string>
#include <vector>

#include "util/result.h"

namespace headlab::train {

// One row of the training log.
struct TrainLogRecord {
  int step = 0;                // steps done
  double loss = 0.0;           // mean training loss over the steps since the last row
  double lr = 0.0;
  double grad_norm = 0.0;      // before clipping, last step
  double tokens_per_s = 0.0;
  double elapsed_s = 0.0;
  bool evaluated = false;      // the fields below are set
  double eval_loss = 0.0;      // held-out text (NaN without held-out text)
  double induction = 0.0;      // best head's scores (scanner)
  double previous_token = 0.0;
  double first_token = 0.0;
  double icl_ratio = 0.0;      // loss on the second copy / the first
};

// train_log.csv: a header line, then one line per record; the five evaluation cells are
// empty on rows that were not evaluated (eval_loss is "nan" without held-out text).
std::string train_log_csv(const std::vector<TrainLogRecord>& log);

// Any CSV log as columns and numbers: an empty cell (or one that is not a number) is NaN,
// a short row is padded with NaN. Errors: corrupt when the text is empty.
struct TrainLogTable {
  std::vector<std::string> columns;
  std::vector<std::vector<double>> rows;  // (rows, columns)
};
Result<TrainLogTable> train_log_table_parse(const std::string& csv_text, const std::string& what);

// The records of a table: it needs the step and loss columns (the others may be missing);
// a row is evaluated when any evaluation cell holds a number; rows without a step are
// skipped. Errors: corrupt when step or loss is missing, naming `what`.
Result<std::vector<TrainLogRecord>> train_log_records(const TrainLogTable& table, const std::string& what);

// The "log" array of train_log.json (one object per record, with the evaluation fields only
// on evaluated rows; eval_loss null without held-out text), as JSON text, and back.
// Errors: corrupt when the text is not a JSON object with a "log" array.
std::string train_log_json_rows(const std::vector<TrainLogRecord>& log);
Result<std::vector<TrainLogRecord>> train_log_json_read(const std::string& json_text, const std::string& what);

}  // namespace headlab::train

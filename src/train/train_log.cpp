// train/train_log.cpp — train_log.csv and the rows of train_log.json, written and read
// (see train_log.h).
#include "train/train_log.h"
#include "util/json_depth.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

namespace headlab::train {

namespace {

constexpr const char* kCsvHeader =
    "step,loss,lr,grad_norm,tokens_per_s,elapsed_s,eval_loss,induction,previous_token,first_token,icl_ratio";

// A cell as a number; NaN when it is empty or not a number.
double cell_number(const std::string& cell) {
  if (cell.empty() || cell == "\r") return std::nan("");
  char* end = nullptr;
  const double v = std::strtod(cell.c_str(), &end);
  return end == cell.c_str() ? std::nan("") : v;
}

}  // namespace

std::string train_log_csv(const std::vector<TrainLogRecord>& log) {
  std::string out = std::string(kCsvHeader) + "\n";
  char buf[320];
  for (const TrainLogRecord& r : log) {
    std::snprintf(buf, sizeof buf, "%d,%.5f,%.6g,%.4f,%.0f,%.1f", r.step, r.loss, r.lr, r.grad_norm, r.tokens_per_s,
                  r.elapsed_s);
    out += buf;
    if (r.evaluated) {
      // eval_loss is "nan" without held-out text (strtod reads it back as NaN)
      std::snprintf(buf, sizeof buf, ",%.5f,%.4f,%.4f,%.4f,%.4f", r.eval_loss, r.induction, r.previous_token,
                    r.first_token, r.icl_ratio);
      out += buf;
    } else {
      out += ",,,,,";
    }
    out += '\n';
  }
  return out;
}

Result<TrainLogTable> train_log_table_parse(const std::string& csv_text, const std::string& what) {
  std::istringstream in(csv_text);
  std::string line;
  if (!std::getline(in, line) || line.empty() || line == "\r") return make_error(ErrorCode::corrupt, what + " is empty.");
  if (line.back() == '\r') line.pop_back();
  TrainLogTable t;
  std::stringstream header(line);
  for (std::string col; std::getline(header, col, ',');) t.columns.push_back(col);
  while (std::getline(in, line)) {
    if (line.empty() || line == "\r") continue;
    // Split on every comma, so an empty last cell is still a cell.
    std::vector<double> row;
    std::size_t start = 0;
    for (;;) {
      const std::size_t comma = line.find(',', start);
      row.push_back(cell_number(line.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    row.resize(t.columns.size(), std::nan(""));
    t.rows.push_back(std::move(row));
  }
  return t;
}

Result<std::vector<TrainLogRecord>> train_log_records(const TrainLogTable& table, const std::string& what) {
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < table.columns.size(); ++i) col[table.columns[i]] = i;
  if (!col.count("step") || !col.count("loss"))
    return make_error(ErrorCode::corrupt, what + " is not a training log: it has no step and loss columns");
  std::vector<TrainLogRecord> out;
  for (const std::vector<double>& row : table.rows) {
    auto get = [&](const char* name) {
      auto it = col.find(name);
      return it == col.end() ? std::nan("") : row[it->second];
    };
    auto or_zero = [](double v) { return std::isfinite(v) ? v : 0.0; };
    const double step = get("step");
    if (!std::isfinite(step)) continue;
    TrainLogRecord r;
    r.step = static_cast<int>(step);
    r.loss = get("loss");
    r.lr = or_zero(get("lr"));
    r.grad_norm = or_zero(get("grad_norm"));
    r.tokens_per_s = or_zero(get("tokens_per_s"));
    r.elapsed_s = or_zero(get("elapsed_s"));
    const double eval[5] = {get("eval_loss"), get("induction"), get("previous_token"), get("first_token"),
                            get("icl_ratio")};
    for (double v : eval) r.evaluated = r.evaluated || std::isfinite(v);
    if (r.evaluated) {
      r.eval_loss = eval[0];
      r.induction = or_zero(eval[1]);
      r.previous_token = or_zero(eval[2]);
      r.first_token = or_zero(eval[3]);
      r.icl_ratio = or_zero(eval[4]);
    }
    out.push_back(r);
  }
  return out;
}

std::string train_log_json_rows(const std::vector<TrainLogRecord>& log) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const TrainLogRecord& r : log) {
    nlohmann::ordered_json row;
    row["step"] = r.step;
    row["loss"] = r.loss;
    row["lr"] = r.lr;
    row["grad_norm"] = r.grad_norm;
    row["tokens_per_s"] = r.tokens_per_s;
    row["elapsed_s"] = r.elapsed_s;
    if (r.evaluated) {
      row["eval_loss"] = std::isfinite(r.eval_loss) ? nlohmann::ordered_json(r.eval_loss) : nlohmann::ordered_json();
      row["induction"] = r.induction;
      row["previous_token"] = r.previous_token;
      row["first_token"] = r.first_token;
      row["icl_ratio"] = r.icl_ratio;
    }
    rows.push_back(row);
  }
  return rows.dump(1);
}

Result<std::vector<TrainLogRecord>> train_log_json_read(const std::string& json_text, const std::string& what) {
  if (auto s = json_depth_check(json_text, what); !s) return tl::unexpected(s.error());
  auto j = nlohmann::json::parse(json_text, nullptr, false);
  if (!j.is_object() || !j.contains("log") || !j["log"].is_array())
    return make_error(ErrorCode::corrupt, what + " is not a training log: no \"log\" array");
  std::vector<TrainLogRecord> out;
  try {
    for (const auto& r : j["log"]) {
      TrainLogRecord rec;
      rec.step = r.value("step", 0);
      rec.loss = r.value("loss", 0.0);
      rec.lr = r.value("lr", 0.0);
      rec.grad_norm = r.value("grad_norm", 0.0);
      rec.tokens_per_s = r.value("tokens_per_s", 0.0);
      rec.elapsed_s = r.value("elapsed_s", 0.0);
      rec.evaluated = r.contains("eval_loss");
      if (rec.evaluated) {
        rec.eval_loss = r["eval_loss"].is_number() ? r["eval_loss"].get<double>() : std::nan("");
        rec.induction = r.value("induction", 0.0);
        rec.previous_token = r.value("previous_token", 0.0);
        rec.first_token = r.value("first_token", 0.0);
        rec.icl_ratio = r.value("icl_ratio", 0.0);
      }
      out.push_back(rec);
    }
  } catch (const nlohmann::json::exception& e) {
    return make_error(ErrorCode::corrupt, what + ": a log row has a field of the wrong type: " + e.what());
  }
  return out;
}

}  // namespace headlab::train

// Tests for train/train_log.h: train_log.csv and train_log.json's rows read back what was
// written, and logs that are not training logs are refused by name.
#include "train/train_log.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace headlab::train;
using headlab::ErrorCode;

namespace {

std::vector<TrainLogRecord> sample_log() {
  TrainLogRecord plain;
  plain.step = 50;
  plain.loss = 5.25;
  plain.lr = 5e-4;
  plain.grad_norm = 1.5;
  plain.tokens_per_s = 10000;
  plain.elapsed_s = 19.5;
  TrainLogRecord evaluated = plain;
  evaluated.step = 100;
  evaluated.loss = 4.5;
  evaluated.evaluated = true;
  evaluated.eval_loss = 4.75;
  evaluated.induction = 0.5;
  evaluated.previous_token = 0.25;
  evaluated.first_token = 0.125;
  evaluated.icl_ratio = 0.75;
  TrainLogRecord no_heldout = evaluated;
  no_heldout.step = 150;
  no_heldout.eval_loss = std::nan("");
  return {plain, evaluated, no_heldout};
}

void expect_same(const std::vector<TrainLogRecord>& got, const std::vector<TrainLogRecord>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); i++) {
    EXPECT_EQ(got[i].step, want[i].step);
    EXPECT_DOUBLE_EQ(got[i].loss, want[i].loss);
    EXPECT_DOUBLE_EQ(got[i].lr, want[i].lr);
    EXPECT_DOUBLE_EQ(got[i].grad_norm, want[i].grad_norm);
    EXPECT_DOUBLE_EQ(got[i].tokens_per_s, want[i].tokens_per_s);
    EXPECT_DOUBLE_EQ(got[i].elapsed_s, want[i].elapsed_s);
    EXPECT_EQ(got[i].evaluated, want[i].evaluated) << "row " << i;
    if (!want[i].evaluated) continue;
    if (std::isnan(want[i].eval_loss)) EXPECT_TRUE(std::isnan(got[i].eval_loss)) << "row " << i;
    else EXPECT_DOUBLE_EQ(got[i].eval_loss, want[i].eval_loss);
    EXPECT_DOUBLE_EQ(got[i].induction, want[i].induction);
    EXPECT_DOUBLE_EQ(got[i].previous_token, want[i].previous_token);
    EXPECT_DOUBLE_EQ(got[i].first_token, want[i].first_token);
    EXPECT_DOUBLE_EQ(got[i].icl_ratio, want[i].icl_ratio);
  }
}

}  // namespace

TEST(TrainLog, CsvReadsBackTheRecordsItWrote) {
  const std::string csv = train_log_csv(sample_log());
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "step,loss,lr,grad_norm,tokens_per_s,elapsed_s,eval_loss,induction,previous_token,first_token,icl_ratio");
  EXPECT_NE(csv.find("\n50,5.25000,0.0005,1.5000,10000,19.5,,,,,\n"), std::string::npos) << csv;
  auto table = train_log_table_parse(csv, "train_log.csv");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(table->columns.size(), 11u);
  ASSERT_EQ(table->rows.size(), 3u);
  EXPECT_TRUE(std::isnan(table->rows[0][6]));  // an empty cell is NaN
  auto records = train_log_records(*table, "train_log.csv");
  ASSERT_TRUE(records) << records.error().message;
  expect_same(*records, sample_log());
}

TEST(TrainLog, JsonRowsReadBackTheRecordsTheyHold) {
  const std::string json = "{\"log\": " + train_log_json_rows(sample_log()) + "}";
  EXPECT_NE(json.find("\"eval_loss\": null"), std::string::npos) << json;
  auto records = train_log_json_read(json, "train_log.json");
  ASSERT_TRUE(records) << records.error().message;
  expect_same(*records, sample_log());
}

TEST(TrainLog, TableKeepsAnyColumnsAndPadsShortRows) {
  auto table = train_log_table_parse("step,loss,extra\r\n1,2.5\n\n2,2.0,7,\n", "log.csv");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(table->columns, (std::vector<std::string>{"step", "loss", "extra"}));
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_TRUE(std::isnan(table->rows[0][2]));
  EXPECT_EQ(table->rows[1][2], 7.0);
}

TEST(TrainLog, RefusesTextThatIsNotATrainingLogNamingTheFile) {
  auto empty = train_log_table_parse("", "models/x/train_log.csv");
  ASSERT_FALSE(empty);
  EXPECT_EQ(empty.error().code, ErrorCode::corrupt);
  EXPECT_EQ(empty.error().message, "models/x/train_log.csv is empty.");
  auto table = train_log_table_parse("a,b\n1,2\n", "other.csv");
  ASSERT_TRUE(table);
  auto records = train_log_records(*table, "other.csv");
  ASSERT_FALSE(records);
  EXPECT_NE(records.error().message.find("other.csv is not a training log: it has no step and loss columns"),
            std::string::npos);
  auto json = train_log_json_read("[1, 2]", "train_log.json");
  ASSERT_FALSE(json);
  EXPECT_NE(json.error().message.find("train_log.json is not a training log"), std::string::npos);
  auto wrong_type = train_log_json_read(R"({"log": [{"step": "ten"}]})", "train_log.json");
  ASSERT_FALSE(wrong_type);
  EXPECT_EQ(wrong_type.error().code, ErrorCode::corrupt);
}

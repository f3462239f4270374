// server/store/value.h — what travels between a store and a database engine: bound parameters
// and the cells of result rows, each NULL, a 64-bit integer, a double or UTF-8 text.
//
//   Params p = {learner, lesson, std::int64_t{3}};
//   const Row& row = rows.front();
//   std::string id = row.text(0);  std::int64_t n = row.integer(1);
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace headlab::server::db {

// std::monostate is SQL NULL.
using Value = std::variant<std::monostate, std::int64_t, double, std::string>;
using Params = std::vector<Value>;

struct Row {
  std::vector<Value> cells;  // (columns), in the SELECT's order

  bool is_null(std::size_t column) const { return std::holds_alternative<std::monostate>(cells.at(column)); }
  // The cell as text; an integer or a double is printed, NULL is "".
  std::string text(std::size_t column) const;
  // The cell as an integer; text is parsed (PostgreSQL's numeric types arrive as text), NULL is 0.
  std::int64_t integer(std::size_t column) const;
};

using Rows = std::vector<Row>;

// What one statement gave back: its rows (none for INSERT without RETURNING) and how many
// rows it inserted, updated or deleted.
struct QueryResult {
  Rows rows;
  std::int64_t changes = 0;
};

}  // namespace headlab::server::db

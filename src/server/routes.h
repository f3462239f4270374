// server/routes.h — the route table: method, path, and the function that answers.
#pragma once

#include <string>
#include <vector>

#include "server/http_types.h"
#include "server/progress_store.h"

namespace headlab::server {

// What routes may use; owned by the Server, outliving every request.
struct ServerContext {
  ProgressStore* store = nullptr;  // null when the database could not be opened
  std::string store_error;         // then: why
};

std::vector<Route> make_routes(ServerContext& context);

}  // namespace headlab::server

// cli/serve_command.cpp — `headlab serve`: the lessons in the browser and the JSON API.
// SIGINT / SIGTERM stop accepting, let in-flight requests finish (at most 5 s), close every
// connection and the store, and exit 0.
#include <CLI/CLI.hpp>

#include <arpa/inet.h>

#include <csignal>
#include <filesystem>
#include <cstdio>
#include <unistd.h>
#include <thread>

#include "cli/commands.h"
#include "cli/db_option.h"
#include "cli/config_note.h"
#include "cli/dtype_option.h"
#include "cli/whole_number.h"
#include "model/blas.h"
#include "model/cpu_peak.h"
#include "model/ops/matmul_packed.h"
#include "server/store/target.h"
#include "server/store/progress_store.h"
#include "server/server.h"

#ifndef HEADLAB_WEB_DIR
#define HEADLAB_WEB_DIR "web/dist"
#endif
#ifndef HEADLAB_DEFAULT_MODEL_DIR
#define HEADLAB_DEFAULT_MODEL_DIR "models/headlab-tiny"
#endif

namespace headlab::cli {
namespace {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string db;
  std::string web = HEADLAB_WEB_DIR;
  std::string model;  // empty: the built-in model, when it is there
  std::string dtype = "auto";
  std::string compute = "auto";  // bf16 where the CPU's AVX512_BF16 outruns its float32 (dtype_option.h)
  bool no_cache = false;
  bool no_model = false;
  bool db_given = false;  // --db was on the command line (not the default file)
  int max_tokens = 256;
  server::ServerOptions limits;  // the HTTP limits, each a named option
};

// Self-pipe: the handler (on whichever thread the kernel picks, OpenBLAS's included) only
// writes the signal number; a normal thread reads it and stops the server.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int sig) {
  unsigned char b = static_cast<unsigned char>(sig);
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &b, 1);
}

std::string budget_seconds_text(double s) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", s);
  return text;
}

int run_serve(const ServeOptions& o) {
  if (pipe(g_signal_pipe) != 0) return print_error("cannot create a pipe for signal handling");
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  // A --db that is neither a path nor a URL headlab reads ("postgresql:/db") stops here, by
  // name, before any store could take it for a file name.
  auto target = db_option(o.db, DbMustExist::no);
  if (!target) return print_error(target.error().message, db_option_exit_code(target.error()));

  for (const std::string& proxy : o.limits.trusted_proxies) {
    unsigned char scratch[16];
    if (inet_pton(AF_INET, proxy.c_str(), scratch) != 1 && inet_pton(AF_INET6, proxy.c_str(), scratch) != 1)
      return print_error("--trusted-proxy " + proxy + " is not an IPv4 or IPv6 address; give the address the "
                         "load balancer connects from, like 127.0.0.1.", 2);
  }

  // an origin is what a browser sends: scheme://host[:port], nothing after (it never matched)
  for (const std::string& origin : o.limits.allow_origins) {
    const bool scheme = origin.rfind("http://", 0) == 0 || origin.rfind("https://", 0) == 0;
    const std::string rest = scheme ? origin.substr(origin.find("//") + 2) : "";
    if (!scheme || rest.empty() || rest.find_first_of("/?#@ ") != std::string::npos)
      return print_error("--allow-origin " + origin.substr(0, 80) + " is not an origin: give scheme://host[:port] as a "
                         "browser sends it, like http://10.0.0.5:5173 (no path)", 2);
  }

  // lesson 3's models: a wrong folder showed only when a learner opened the lesson
  if (std::error_code ec; !o.limits.models_dir.empty() && !std::filesystem::is_directory(o.limits.models_dir, ec))
    return print_error("--models-dir " + o.limits.models_dir + " is not a folder (it holds the word-order lesson's "
                       "models: headlab-nopos, headlab-learned, headlab-rope)", 2);

  // A budget as long as its window could never be spent: the flag would say a limit that is none.
  if (o.limits.client_model_seconds >= o.limits.client_model_window_s)
    return print_error("--client-model-seconds (" + budget_seconds_text(o.limits.client_model_seconds) +
                           ") must be less than --client-model-window (" +
                           std::to_string(o.limits.client_model_window_s) + " s); 0 turns the budget off.",
                       2);

  server::ServerOptions options = o.limits;
  options.host = o.host;
  options.port = o.port;
  options.db_path = o.db;
  options.web_dir = o.web;
  options.max_tokens = o.max_tokens;
  options.model_load.dtype = dtype_choice(o.dtype);
  options.compute_auto = o.compute == "auto";
  if (options.compute_auto) options.bf16_speedup = model::cpu_bf16_speedup();  // ~10 ms
  options.model_load.compute = compute_auto_choice(o.compute, options.bf16_speedup);
  options.model_load.cache = !o.no_cache;
  if (!o.no_model) {
    if (!o.model.empty()) options.model_dir = o.model;
    else if (std::filesystem::exists(std::filesystem::path(HEADLAB_DEFAULT_MODEL_DIR) / "config.json"))
      options.model_dir = HEADLAB_DEFAULT_MODEL_DIR;
    else
      options.no_model_reason = "the built-in model is not at " HEADLAB_DEFAULT_MODEL_DIR " (no config.json there).";
  }
  if (!options.model_dir.empty()) config_note(options.model_dir);
  auto srv = server::Server::create(options);
  if (!srv) return print_error(srv.error().message);
  // A school's PostgreSQL that cannot be reached at start: stop with its one-line reason, so
  // the supervisor restarts the server, rather than serve a school that cannot save progress.
  // So does a --db the teacher named: serving on without it lost every learner's progress
  // behind one line of start-up output. (The default file, when it cannot be opened, still
  // serves the lessons, saying so.)
  if ((target->engine == server::db::Engine::postgresql || o.db_given) && !(*srv)->store_error().empty())
    return print_error((*srv)->store_error());
  if (auto s = (*srv)->bind(); !s) return print_error(s.error().message);

  std::printf("headlab: serving on http://%s:%d/\n", o.host.c_str(), (*srv)->port());
  std::printf("headlab: matrix products on %s; %s\n", model::blas_kernels_description().c_str(),
              model::matmul_packed_kernels_description().c_str());
  if (o.host == "127.0.0.1" || o.host == "localhost" || o.host == "::1")
    std::printf("headlab: only this machine can connect (bound to %s); use --host 0.0.0.0 to share it with a class\n",
                o.host.c_str());
  else if (o.limits.server_names.empty())
    std::printf("headlab: bound to %s: other machines on the network can connect. Add --server-name NAME (the "
                "name learners type) so a page on another site whose name was rebound to this address is refused\n",
                o.host.c_str());
  else
    std::printf("headlab: bound to %s: other machines on the network can connect by its address or as %s\n",
                o.host.c_str(), o.limits.server_names.front().c_str());
  if ((*srv)->store_error().empty())
    std::printf("headlab: progress is kept in %s\n", server::db::redact_url((*srv)->database_path()).c_str());
  else
    std::printf("headlab: WARNING: learners' progress will NOT be saved: %s\n", (*srv)->store_error().c_str());
  if (!(*srv)->model_name().empty())
    std::printf("headlab: model %s loaded from %s\n", (*srv)->model_name().c_str(), options.model_dir.c_str());
  else
    std::printf("headlab: no model loaded: %s The model pages will say so; pass --model DIR to load one.\n",
                (*srv)->model_error().c_str());
  for (const std::string& note : (*srv)->model_notes()) std::printf("headlab: note: %s\n", note.c_str());
  for (const std::string& note : (*srv)->store_notes()) std::printf("headlab: note: %s\n", note.c_str());
  if (!(*srv)->web_app_found())
    std::printf("headlab: warning: no web app at %s (run `npm ci --prefix web && npm run build --prefix web`, "
                "or pass --web DIR); the JSON API works without it\n",
                o.web.c_str());
  std::printf("headlab: press Ctrl-C to stop\n");
  std::fflush(stdout);

  server::Server* raw = srv->get();
  std::thread waiter([raw] {
    unsigned char sig = 0;
    if (read(g_signal_pipe[0], &sig, 1) != 1 || sig == 0) return;  // 0: listen() ended by itself
    std::printf("headlab: stopping (signal %d): finishing requests in flight\n", sig);
    std::fflush(stdout);
    raw->stop();
  });
  (*srv)->listen();
  // listen() also returns if the socket fails; wake the waiter so it can exit.
  unsigned char zero = 0;
  [[maybe_unused]] ssize_t n = write(g_signal_pipe[1], &zero, 1);
  waiter.join();
  std::printf("headlab: stopped\n");
  return 0;
}

}  // namespace

void add_serve_command(CLI::App& app, int& exit_code) {
  auto opts = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "Serve the lessons in the browser and the JSON API");
  cmd->footer(
      "The JSON API is described in docs/api.md. Learners' challenge progress and feedback\n"
      "are kept in an SQLite file, or in PostgreSQL for several servers, and survive restarts.\n\n"
      "Examples:\n"
      "  headlab serve                              http://127.0.0.1:8080/\n"
      "  headlab serve --host 0.0.0.0 --port 9000   share with a class on the network\n"
      "  headlab serve --db ./class.db              keep progress in this file\n"
      "  headlab serve --db postgresql://headlab@db.school:5432/headlab\n"
      "                                             share one PostgreSQL database between servers (docs/school.md)");
  cmd->add_option("--host", opts->host, "Address to listen on (127.0.0.1: this machine only)")->capture_default_str();
  cmd->add_option("--port", opts->port, "Port to listen on (0: any free port, printed at start-up)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--db", opts->db,
                  "Where progress is kept: an SQLite file (default: " + server::default_database_path() +
                      ") or a postgresql://USER@HOST:PORT/NAME URL (postgres:// too)");
  cmd->add_option("--web", opts->web, "Folder of the built web app")->capture_default_str();
  cmd->add_option("--model", opts->model,
                  "A Hugging Face folder of the GPT-2, GPT-NeoX, Llama, Mistral, Qwen 2/3 or Gemma 2/3 family "
                  "(config.json, model.safetensors or its shards, tokenizer.json or vocab.json + merges.txt) or a "
                  ".gguf file; default: the built-in model " HEADLAB_DEFAULT_MODEL_DIR);
  add_dtype_option(cmd, opts->dtype);
  add_compute_option(cmd, opts->compute, /*with_auto=*/true);
  add_cache_option(cmd, opts->no_cache);
  cmd->add_flag("--no-model", opts->no_model, "Serve only the lessons that need no model");
  cmd->add_option("--models-dir", opts->limits.models_dir,
                  "Folder of the word-order lesson's models (headlab-nopos, headlab-learned, headlab-rope); default: "
                  "the folder that holds --model's, else models");
  cmd->add_option("--max-tokens", opts->max_tokens, "Longest text a model request may send, in tokens")
      ->check(CLI::Range(2, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--max-patch-multiply-adds", opts->limits.max_patch_multiply_adds,
                  "Most work a patching sweep (POST /api/model/patch and /api/model/path-patch) may cost, in "
                  "multiply-adds; past it the sweep is refused with its cost and ways to narrow it (1e11: about "
                  "10 s on 2 cores)")
      ->check(number_above(0, 1e30, "1e30"))
      ->capture_default_str();
  cmd->add_option("--client-model-seconds", opts->limits.client_model_seconds,
                  "Seconds of model time one client may take in a window (--client-model-window, 60 s) while "
                  "other clients use the model too (a request of theirs waits or runs, or ran within the window); "
                  "past it, its model requests answer 429 with Retry-After (the seconds until enough of its window "
                  "has passed), so a client running patching sweeps or scans cannot hold the model for a class. A "
                  "client is an address, or one learner of a class (a learner who joined with a class code, even "
                  "behind one school address; made-up learner ids share their address's budget). A client alone "
                  "with the model is never limited, and the model always serves the waiting client with the least "
                  "model time in the window first. 0: no budget")
      ->check(number_from(0, 3600, "3600"))
      ->capture_default_str();
  cmd->add_option("--client-model-window", opts->limits.client_model_window_s,
                  "The window, in seconds, a client's model time is counted in: for --client-model-seconds and for "
                  "the turns (the waiting client with the least model time in it goes first)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  server::ServerOptions& l = opts->limits;
  const std::string limits = "HTTP limits";
  cmd->add_option("--max-connections", l.max_connections, "Open connections in all; more are refused")
      ->check(CLI::Range(1, 1000000))->capture_default_str()->group(limits);
  cmd->add_option("--max-connections-per-ip", l.max_connections_per_ip,
                  "Open connections from one address (a class behind one NAT address shares it)")
      ->check(CLI::Range(1, 1000000))->capture_default_str()->group(limits);
  cmd->add_option("--request-deadline", l.request_deadline_s,
                  "Seconds a request's headers and body may take to arrive, from the connection's start or its "
                  "previous answer; sending slowly does not extend it")
      ->check(CLI::Range(1, 3600))->capture_default_str()->group(limits);
  cmd->add_option("--idle-timeout", l.idle_timeout_s, "Seconds a silent keep-alive connection stays open")
      ->check(CLI::Range(1, 3600))->capture_default_str()->group(limits);
  cmd->add_option("--max-header-bytes", l.max_header_bytes, "Largest request line and headers, in bytes (more: 431)")
      ->check(CLI::Range(1024, 1 << 20))->capture_default_str()->group(limits);
  cmd->add_option("--max-header-count", l.max_header_count, "Most header fields in a request (more: 431)")
      ->check(CLI::Range(8, 10000))->capture_default_str()->group(limits);
  cmd->add_option("--max-body-bytes", l.max_body_bytes, "Largest request body, in bytes (more: 413)")
      ->check(CLI::Range(1024, 64 << 20))->capture_default_str()->group(limits);
  cmd->add_option("--allow-origin", l.allow_origins,
                  "Another origin (http://host:port) whose pages may POST here; repeat for more")
      ->group(limits);
  cmd->add_option("--server-name", l.server_names,
                  "A name this server is reached by (class.school.example); with --host beyond loopback, requests "
                  "naming another host are refused (a rebound page's are). Repeat for more; addresses always work")
      ->group(limits);
  cmd->add_option_function<std::size_t>(
         "--max-unread-mb", [&l](std::size_t mb) { l.max_unread_bytes = mb << 20; },
         "Answers queued and not yet read by their clients, in MB in all; past it the slowest reader is cut "
         "(default 512)")
      ->check(CLI::Range(1, 1 << 20))->group(limits);
  cmd->add_option_function<std::size_t>(
         "--max-unread-mb-per-ip", [&l](std::size_t mb) { l.max_unread_bytes_per_client = mb << 20; },
         "The same per client address (an IPv6 client by its /64; default 64)")
      ->check(CLI::Range(1, 1 << 20))->group(limits);
  cmd->add_option("--learner-writes-per-minute", l.learner_writes_per_minute,
                  "Progress writes and lesson checks one learner id may make a minute (more: 429; 0: no limit)")
      ->check(CLI::Range(0, 10000000))->capture_default_str()->group(limits);
  cmd->add_option("--progress-writes-per-minute", l.progress_writes_per_minute,
                  "Progress writes and lesson checks one client address may make a minute (more: 429; 0: no limit)")
      ->check(CLI::Range(0, 10000000))->capture_default_str()->group(limits);
  cmd->add_option_function<std::int64_t>(
         "--db-max-mb", [&l](std::int64_t mb) { l.db_max_bytes = mb << 20; },
         "The database's cap in MB (SQLite: the file; PostgreSQL: the tables of its schema); checks, joins and "
         "feedback past it answer 507, reads, resets and deletions go on (default 512)")
      ->check(CLI::Range(1, 1 << 20))->group(limits);
  cmd->add_option("--threads", l.threads, "Event-loop threads of the HTTP layer")
      ->check(CLI::Range(1, 64))->capture_default_str()->group(limits);
  cmd->add_option("--trusted-proxy", l.trusted_proxies,
                  "The address of a load balancer in front (127.0.0.1); a request from it counts, for the "
                  "per-address limits, as from the last address in its X-Forwarded-For. Repeat for more")
      ->group(limits);
  cmd->add_option("--login-threads", l.password_hash_threads,
                  "Threads that hash teachers' secrets (creating a class, logging in) off the event loop; at most "
                  "16 such requests wait, 2 per address, more get 503 (0: half the cores)")
      ->check(CLI::Range(0, 64))->capture_default_str()->group(limits);
  cmd->add_flag("--trust-proxy-https", l.trust_forwarded_proto,
                "A TLS proxy in front sets X-Forwarded-Proto: https; mark the teacher's cookie Secure then")
      ->group(limits);
  cmd->callback([opts, cmd, &exit_code] {
    // options that say nothing or contradict: each was read as the default, or dropped
    for (const char* name : {"--model", "--db", "--models-dir", "--web"})
      if (cmd->count(name) && cmd->get_option(name)->as<std::string>().empty()) {
        exit_code = print_error(std::string(name) + " is empty: name a path, or leave the option out for the default", 2);
        return;
      }
    if (opts->no_model)
      for (const char* name : {"--model", "--dtype", "--compute", "--no-cache"})
        if (cmd->count(name)) {
          exit_code = print_error(std::string(name) + " and --no-model contradict each other: --no-model loads no model", 2);
          return;
        }
    opts->db_given = cmd->count("--db") > 0;
    exit_code = run_serve(*opts);
  });
}

}  // namespace headlab::cli

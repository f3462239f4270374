-- A class of learners on the first lesson: list heads, compute weights, check
-- challenges (each connection is its own learner), use the calculator.
local sentence = "the cat chased the dog . the cat chased the"
local heads = {"previous", "first", "same-word", "induction", "punctuation"}
local counter = 0
-- HEADLAB_LOAD_DELAY_MS: each connection waits this long between requests (a learner reading,
-- not a benchmark); unset, the connections ask as fast as they can.
local pause = tonumber(os.getenv("HEADLAB_LOAD_DELAY_MS") or "0")
if pause > 0 then
  function delay() return pause end
end

function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
end

function init(args)
  n = 0
  learner = string.format("load-learner-%04d", id)
end

function request()
  n = n + 1
  local k = n % 4
  local head = heads[(n % 5) + 1]
  if k == 0 then
    return wrk.format("GET", "/api/heads")
  elseif k == 1 then
    return wrk.format("POST", "/api/weights", {["Content-Type"] = "application/json"},
      string.format('{"sentence": "%s", "head": "%s", "mask": %s}', sentence, head, (n % 2 == 0) and "true" or "false"))
  elseif k == 2 then
    return wrk.format("POST", "/api/progress/check", {["Content-Type"] = "application/json"},
      string.format('{"learner": "%s-%d", "lesson": "causal-mask", "sentence": "%s", "head": "%s", "mask": true, "query": %d}',
        learner, n % 50, sentence, head, n % 10))
  else
    return wrk.format("GET", "/api/head-split?d_model=768&h=12")
  end
end

function done(summary, latency, requests)
  local e = summary.errors
  local f = io.open(os.getenv("HEADLAB_LOAD_RESULT") or "/dev/stdout", "w")
  f:write(string.format("requests %d\nfailed %d\nconnect %d\nread %d\nwrite %d\ntimeout %d\nnon2xx %d\np50_ms %.2f\np99_ms %.2f\nrps %.0f\n",
    summary.requests, e.connect + e.read + e.write + e.timeout + e.status, e.connect, e.read, e.write, e.timeout, e.status,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6)))
  f:close()
end

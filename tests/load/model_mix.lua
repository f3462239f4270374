-- A smaller class on the model pages: run the model on varied texts (some repeated, so
-- the cache answers) and ablate heads. 503s are the server saying "busy" on purpose;
-- anything else that is not 2xx is a failure.
local texts = {
  "the cat sat on the mat",
  "once upon a time there was a king . once upon a time there was a king",
  "the river rose and the river fell",
  "we hold these truths to be self evident",
}
local threads = {}

function setup(thread)
  table.insert(threads, thread)
  thread:set("id", #threads)
end

function init(args)
  n = 0
  ok, busy, other = 0, 0, 0
end

function request()
  n = n + 1
  local text = texts[(n % #texts) + 1] .. " " .. tostring(id * 1000 + (n % 25))
  if n % 3 == 0 then
    return wrk.format("POST", "/api/model/intervene", {["Content-Type"] = "application/json"},
      string.format('{"text": "%s", "ablate": [{"layer": 0, "head": 0}]}', text))
  end
  return wrk.format("POST", "/api/model/run", {["Content-Type"] = "application/json"},
    string.format('{"text": "%s", "top_k": 3}', text))
end

function response(status, headers, body)
  if status >= 200 and status < 300 then ok = ok + 1
  elseif status == 503 then busy = busy + 1
  else other = other + 1 end
end

function done(summary, latency, requests)
  local total_ok, total_busy, total_other = 0, 0, 0
  for _, t in ipairs(threads) do
    total_ok = total_ok + t:get("ok")
    total_busy = total_busy + t:get("busy")
    total_other = total_other + t:get("other")
  end
  local e = summary.errors
  local f = io.open(os.getenv("HEADLAB_LOAD_RESULT") or "/dev/stdout", "w")
  f:write(string.format("requests %d\nok %d\nbusy_503 %d\nfailed %d\np50_ms %.2f\np99_ms %.2f\nrps %.0f\n",
    summary.requests, total_ok, total_busy, total_other + e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6)))
  f:close()
end

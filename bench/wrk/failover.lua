-- Cycles a list of request paths (like cycle.lua) and, at the end, prints one line
-- "FAILOVER_JSON {...}" with what bench/failover.py reports: requests, every kind of error,
-- the latency percentiles and maximum, and how many answers took longer than 1 s.
-- Usage: wrk -t1 -c32 -d30s --timeout 1s -s bench/wrk/failover.lua URL -- URLFILE
-- An answer slower than --timeout is not in wrk's latency histogram: wrk counts it (and
-- every request still open at one of its 2-second checks past that age) as a timeout. Run
-- with a longer --timeout to see the true maximum and the count over 1 s.
local requests = {}
local index = 0

function setup(thread)
  thread:set("thread_id", thread_id_next or 0)
  thread_id_next = (thread_id_next or 0) + 1
end

function init(args)
  local file = assert(args[1], "usage: -- URLFILE")
  for line in io.lines(file) do
    if line ~= "" then
      requests[#requests + 1] = wrk.format("GET", line)
    end
  end
  assert(#requests > 0, "no paths in " .. file)
  index = ((thread_id or 0) * 7919) % #requests
end

function request()
  index = index % #requests + 1
  return requests[index]
end

function done(summary, latency, requests_)
  local e = summary.errors
  -- latency[i] is the number of answers that took exactly i microseconds (wrk keeps one
  -- counter per microsecond up to --timeout).
  local over = 0
  for us = 1000001, latency.max do
    over = over + latency[us]
  end
  io.write(string.format(
    'FAILOVER_JSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,' ..
    '"p50_ms":%.3f,"p99_ms":%.3f,"p999_ms":%.3f,"max_ms":%.3f,"over_1s":%d,' ..
    '"non_2xx_3xx":%d,"connect":%d,"read":%d,"write":%d,"timeout":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, over,
    e.status, e.connect, e.read, e.write, e.timeout))
end

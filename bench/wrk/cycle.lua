-- Cycles a fixed list of request paths in file order, so every run sends the same requests.
-- Usage: wrk -t1 -c32 -d15s -s bench/wrk/cycle.lua http://127.0.0.1:PORT -- URLFILE [RATE]
--   URLFILE  one path per line (written by bench/gen_corpus.py: urls/mix.txt, get.txt, ...)
--   RATE     optional requests/s per wrk thread (bench/run.py uses -t1), spread over all of the
--            thread's connections; omitted = as fast as the server answers
-- The done() hook prints one line "BENCH_JSON {...}" for bench/run.py to parse.
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clk_id, bench_timespec *tp);
]]
local CLOCK_MONOTONIC = 1
local ts = ffi.new("bench_timespec")

local function now_ms()
  ffi.C.clock_gettime(CLOCK_MONOTONIC, ts)
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local threads = {}
local requests = {}
local index = 0
local interval = nil -- ms between request starts in this thread (fixed-rate mode)
local next_slot = nil

function setup(thread)
  thread:set("thread_id", #threads)
  table.insert(threads, thread)
end

function init(args)
  local file = assert(args[1], "usage: -- URLFILE [RATE]")
  for line in io.lines(file) do
    if line ~= "" then
      -- Pre-formatted once: building requests in the hot loop would load the client.
      requests[#requests + 1] = wrk.format("GET", line)
    end
  end
  assert(#requests > 0, "no paths in " .. file)
  -- Threads start at different offsets so that several threads do not send the same URL.
  index = ((thread_id or 0) * 7919) % #requests
  if args[2] then
    interval = 1000.0 / tonumber(args[2])
  end
end

function request()
  index = index % #requests + 1
  return requests[index]
end

-- Fixed rate: wrk calls delay() before every request on every connection. Handing out start
-- slots from one schedule per thread paces the thread as a whole (not each connection) and,
-- when the server falls behind, sends at once to catch up instead of silently lowering the rate.
function delay()
  if not interval then
    return 0
  end
  local now = now_ms()
  next_slot = (next_slot or now) + interval
  local wait = next_slot - now
  if wait < 0 then
    return 0
  end
  return wait
end

function done(summary, latency, requests_)
  local e = summary.errors
  local seconds = summary.duration / 1e6
  io.write(string.format(
    'BENCH_JSON {"requests":%d,"duration_s":%.3f,"rps":%.1f,"bytes":%d,' ..
    '"p50_ms":%.3f,"p90_ms":%.3f,"p99_ms":%.3f,"p999_ms":%.3f,"max_ms":%.3f,"mean_ms":%.3f,' ..
    '"http_errors":%d,"socket_errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d}}\n',
    summary.requests, seconds, summary.requests / seconds, summary.bytes,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000, latency.mean / 1000,
    e.status, e.connect, e.read, e.write, e.timeout))
end

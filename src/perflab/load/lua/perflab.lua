-- perflab's sysbench driver.
--
-- Loads the workload named by PERFLAB_WORKLOAD (a sysbench Lua script on LUA_PATH) and replaces
-- sysbench's human-readable reports with one JSON object per line:
--   {"type":"interval", ...}   every --report-interval seconds
--   {"type":"total", ...}      once, cumulative over the run
--   {"type":"histogram", ...}  once per worker thread: its event latencies in log buckets
-- The per-thread histograms exist because sysbench 1.0 only computes one percentile and resets
-- its global histogram before the cumulative hook runs; perflab merges them to get p95 and p99.

local workload = os.getenv("PERFLAB_WORKLOAD")
if workload == nil or workload == "" then
   error("PERFLAB_WORKLOAD is not set")
end
require(workload)

local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } perflab_timespec_t;
int clock_gettime(int clk_id, perflab_timespec_t *tp);
]]

local CLOCK_MONOTONIC = 1
-- Same bucket geometry as sysbench's own latency histogram: 1024 log buckets, 0.001 ms .. 100 s.
local BUCKETS = 1024
local LOG_MIN = math.log(0.001)
local MULT = (BUCKETS - 1) / (math.log(100000) - LOG_MIN)

local clock = ffi.new("perflab_timespec_t")
local function now_ms()
   ffi.C.clock_gettime(CLOCK_MONOTONIC, clock)
   return tonumber(clock.tv_sec) * 1000 + tonumber(clock.tv_nsec) / 1e6
end

local log, floor = math.log, math.floor
local counts = {}
for i = 0, BUCKETS - 1 do
   counts[i] = 0  -- preallocated, so that counting an event never grows the table
end

local workload_event = event
-- A fixed signature, not varargs: LuaJIT compiles this, it would not compile a vararg wrapper.
function event(thread_id)
   local started = now_ms()
   local ret = workload_event(thread_id)
   local elapsed = now_ms() - started
   local i = 0
   if elapsed > 0 then
      i = floor((log(elapsed) - LOG_MIN) * MULT + 0.5)
      if i < 0 then i = 0 elseif i >= BUCKETS then i = BUCKETS - 1 end
   end
   counts[i] = counts[i] + 1
   return ret
end

local function emit(line)
   -- one write per line, so that lines from concurrent threads never interleave
   io.stdout:write(line .. "\n")
   io.stdout:flush()
end

local workload_thread_done = thread_done
function thread_done(...)
   if workload_thread_done ~= nil then
      workload_thread_done(...)
   end
   local parts = {}
   for i = 0, BUCKETS - 1 do
      if counts[i] > 0 then
         parts[#parts + 1] = string.format('"%d":%d', i, counts[i])
      end
   end
   emit(string.format('{"type":"histogram","thread":%d,"log_min":%.17g,"mult":%.17g,"buckets":{%s}}',
                      sysbench.tid, LOG_MIN, MULT, table.concat(parts, ",")))
end

local function stat_json(kind, stat)
   return string.format(
      '{"type":"%s","time":%.6f,"seconds":%.6f,"threads":%d,"events":%d,"reads":%d,' ..
      '"writes":%d,"other":%d,"errors":%d,"reconnects":%d,"latency_min_ms":%.6f,' ..
      '"latency_avg_ms":%.6f,"latency_max_ms":%.6f,"latency_pct_ms":%.6f}',
      kind, stat.time_total, stat.time_interval, stat.threads_running, stat.events,
      stat.reads, stat.writes, stat.other, stat.errors, stat.reconnects,
      (stat.latency_min or 0) * 1000, (stat.latency_avg or 0) * 1000,
      (stat.latency_max or 0) * 1000, (stat.latency_pct or 0) * 1000)
end

sysbench.hooks.report_intermediate = function(stat)
   emit(stat_json("interval", stat))
end

sysbench.hooks.report_cumulative = function(stat)
   emit(stat_json("total", stat))
end

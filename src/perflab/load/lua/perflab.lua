-- perflab's sysbench driver.
--
-- Loads the workload named by PERFLAB_WORKLOAD (a sysbench Lua script on LUA_PATH) and replaces
-- sysbench's human-readable reports with one JSON object per line:
--   {"type":"interval", ...}   every --report-interval seconds
--   {"type":"total", ...}      once, cumulative over the run
--   {"type":"histogram", ...}  once per worker thread: its measured event latencies in log buckets
--   {"type":"window", ...}     once per worker thread: its events, counted per time slice
-- The per-thread histograms exist because sysbench 1.0 only computes one percentile and resets
-- its global histogram before the cumulative hook runs; perflab merges them to get p95 and p99.
--
-- Time slices (PERFLAB_SLICES = "epoch_ms slice_ms count index lead_ms measure_ms"): several
-- sysbench processes, one per server, take turns on one clock (CLOCK_MONOTONIC): from epoch_ms
-- on, slice s belongs to the process whose index is s mod count; outside its slices a thread
-- sleeps. Events starting in the first lead_ms warm up and are not measured; after
-- lead_ms + measure_ms the threads idle until sysbench's --time ends the run. Without the
-- variable every event is measured, as in a plain sysbench run.
--
-- A slice's work is its own: a thread does not start an event when less of its slice is left
-- than its events take (a running mean of its own latencies), so that its work does not run
-- on into the next process's slice and take that server's time; an event that still does is
-- counted for the share of its time inside its own slice (a fraction of an event).
--
-- A process alone (count 1: a point measured on its own) has every slice, so it starts events
-- until the window ends; events across the window's start or end count for their share inside.

local workload = os.getenv("PERFLAB_WORKLOAD")
if workload == nil or workload == "" then
   error("PERFLAB_WORKLOAD is not set")
end

-- On a server perflab did not start, every connection the workload's script opens gets its
-- session settings before its first statement: PERFLAB_READ_ONLY=1 makes it read-only at the
-- server, so a write fails there (error 1792) whatever its text looked like;
-- PERFLAB_MAX_STATEMENT_SECONDS=N lets the server abort any statement that outlives the run
-- (MariaDB's max_statement_time, MySQL's max_execution_time);
-- PERFLAB_SESSIONS_FILE=PATH appends each connection's id to PATH, so that perflab's sentinel
-- can end these sessions on the server if perflab dies (a killed sysbench leaves its running
-- statement running there). The script's driver is wrapped; nothing else changes.
local session = {}
if os.getenv("PERFLAB_READ_ONLY") == "1" then
   session[#session + 1] = {"SET SESSION TRANSACTION READ ONLY", true}
end
local limit = tonumber(os.getenv("PERFLAB_MAX_STATEMENT_SECONDS") or "")
if limit then  -- MariaDB's, else MySQL's (milliseconds, SELECTs): one of the two is there
   session[#session + 1] = {"SET SESSION max_statement_time = " .. limit, false,
                            string.format("SET SESSION max_execution_time = %d", limit * 1000)}
end
local sessions_file = os.getenv("PERFLAB_SESSIONS_FILE")
if sessions_file == "" then sessions_file = nil end
if #session > 0 or sessions_file then
   local make_driver = sysbench.sql.driver
   sysbench.sql.driver = function(...)
      local driver = make_driver(...)
      local wrapped = {}
      function wrapped.connect(_)
         local con = driver:connect()
         for _, setting in ipairs(session) do
            local sql, required, otherwise = setting[1], setting[2], setting[3]
            local ok, err = pcall(con.query, con, sql)
            if not ok and otherwise then
               ok, err = pcall(con.query, con, otherwise)
            end
            if not ok and required then
               error(err)
            end
         end
         if sessions_file then
            local row = con:query("SELECT CONNECTION_ID()"):fetch_row()
            local out = io.open(sessions_file, "a")  -- absent on a client worker: not noted
            if out then
               out:write(row[1] .. "\n")
               out:close()
            end
         end
         return con
      end
      return setmetatable(wrapped, {__index = function(_, name)
         local member = driver[name]
         if type(member) ~= "function" then
            return member
         end
         return function(_, ...) return member(driver, ...) end
      end})
   end
end
require(workload)

local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } perflab_timespec_t;
int clock_gettime(int clk_id, perflab_timespec_t *tp);
int usleep(unsigned int usec);
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

local EPOCH, SLICE, TURNS, MINE, LEAD, MEASURE
local spec = os.getenv("PERFLAB_SLICES")
if spec ~= nil and spec ~= "" then
   local f = {}
   for word in spec:gmatch("%S+") do f[#f + 1] = tonumber(word) end
   EPOCH, SLICE, TURNS, MINE, LEAD, MEASURE = f[1], f[2], f[3], f[4], f[5], f[6]
end
local sliced = EPOCH ~= nil
local finish = sliced and LEAD + MEASURE or 0
local lead = LEAD or 0

local executed, measured, latency_sum, latency_min, latency_max = 0, 0, 0, -1, 0
local first_ms = -1
local per_slice = {}
local expected_ms = 0  -- this thread's running mean event latency (sliced runs)

-- Sleep until this process's next slice, with time in it for an event of this thread's usual
-- length; nil once the measured window is over.
local function my_turn(t)
   while true do
      local at = t - EPOCH
      if at >= finish then
         return nil
      elseif at < 0 then
         ffi.C.usleep(floor(-at * 1000) + 1)
      else
         local s = floor(at / SLICE)
         local left = (s + 1) * SLICE - at
         if s % TURNS == MINE and (TURNS == 1 or left > expected_ms) then
            return t
         end
         ffi.C.usleep(floor(left * 1000) + 20)
      end
      t = now_ms()
   end
end

local workload_event = event
-- perflab times every event. For bench/overhead only, PERFLAB_TIMING="alternate MS" times the
-- events of every other MS-millisecond window of the clock and counts events per window, so
-- that one run compares the workload with and without perflab's instrumentation, window by
-- window, on the same threads and connections.
local alternate = tonumber((os.getenv("PERFLAB_TIMING") or ""):match("^alternate (%d+)$"))

-- A fixed signature, not varargs: LuaJIT compiles this, it would not compile a vararg wrapper.
function event(thread_id)
   local started, at = now_ms(), 0
   local timing = true
   if sliced then
      started = my_turn(started)
      if started == nil then
         ffi.C.usleep(2000)  -- the window is over: idle until sysbench's --time ends the run
         return 0
      end
      at = started - EPOCH
      if first_ms < 0 then first_ms = at end
   elseif alternate then
      local w = floor(started / alternate)
      per_slice[w] = (per_slice[w] or 0) + 1
      timing = w % 2 == 0
   end
   local ret = workload_event(thread_id)
   executed = executed + 1
   local ended, share = 0, 1
   if sliced then
      ended = now_ms()
      local elapsed = ended - started
      expected_ms = expected_ms == 0 and elapsed or 0.9 * expected_ms + 0.1 * elapsed
      local stop = TURNS == 1 and finish or (floor(at / SLICE) + 1) * SLICE
      local over = ended - EPOCH - stop
      if over > 0 and elapsed > 0 then
         share = 1 - over / elapsed
      end
      if TURNS == 1 and at < lead and ended - EPOCH > lead and elapsed > 0 then
         -- begun in the lead, ended in the window (a fleet's lead ends where a turn begins)
         local inside = (ended - EPOCH - lead) / elapsed
         measured = measured + inside
         per_slice[0] = (per_slice[0] or 0) + inside
      end
   end
   if at >= lead then
      measured = measured + share
      if timing then
         if not sliced then ended = now_ms() end
         local elapsed = ended - started
         local i = 0
         if elapsed > 0 then
            i = floor((log(elapsed) - LOG_MIN) * MULT + 0.5)
            if i < 0 then i = 0 elseif i >= BUCKETS then i = BUCKETS - 1 end
         end
         counts[i] = counts[i] + 1
         latency_sum = latency_sum + elapsed
         if latency_min < 0 or elapsed < latency_min then latency_min = elapsed end
         if elapsed > latency_max then latency_max = elapsed end
      end
      if sliced then
         local s = floor((at - LEAD) / SLICE)
         per_slice[s] = (per_slice[s] or 0) + share
      end
   end
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
   local slices = {}
   for s, n in pairs(per_slice) do
      slices[#slices + 1] = string.format('"%d":%.4f', s, n)
   end
   emit(string.format('{"type":"window","thread":%d,"executed":%d,"measured":%.4f,' ..
                      '"latency_sum_ms":%.6f,"latency_min_ms":%.6f,"latency_max_ms":%.6f,' ..
                      '"first_ms":%.3f,"slices":{%s}}',
                      sysbench.tid, executed, measured, latency_sum, math.max(latency_min, 0),
                      latency_max, first_ms, table.concat(slices, ",")))
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

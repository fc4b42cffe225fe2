-- perflab's `sql` workload: the user's statements, picked at random by weight.
--
-- PERFLAB_SQL_STATEMENTS names the statements file perflab wrote from the user's workload file
-- (read by perflab_statements.lua). Placeholders are filled per execution:
--   {int:LO:HI}   a uniform integer in [LO, HI]
--   {str:MIN:MAX} a quoted string of MIN to MAX random lower-case letters
--   {pick:NAME}   one of the statement's NAME literals, uniformly

local path = os.getenv("PERFLAB_SQL_STATEMENTS")
if path == nil or path == "" then
   error("PERFLAB_SQL_STATEMENTS is not set")
end

local statements_file = require("perflab_statements")
local statements, total = statements_file.load(path)
if total == 0 then
   error("no statements in " .. path)
end

local uniform = sysbench.rand.uniform

local function letters(low, high)
   local chosen = {}
   for i = 1, uniform(low, high) do
      chosen[i] = string.char(uniform(97, 122))
   end
   return "'" .. table.concat(chosen) .. "'"
end

-- A value for one placeholder. sysbench draws unsigned 32-bit integers: an {int:} range is
-- drawn as an offset from its low end (perflab keeps ranges that narrow, bounds exact here).
local function choose(part, picks)
   if part.kind == "I" then
      return string.format("%.0f", part.low + uniform(0, part.high - part.low))
   elseif part.kind == "S" then
      return letters(part.low, part.high)
   end
   local list = picks[part.name]
   return list[uniform(1, #list)]
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   local pick = uniform(1, total)
   for _, statement in ipairs(statements) do
      if pick <= statement.upto then
         con:query(statements_file.render(statement, choose))
         return
      end
   end
end

-- perflab's `sql` workload: the user's statements, picked at random by weight.
--
-- PERFLAB_SQL_STATEMENTS names a file of `weight<TAB>statement` lines written by perflab from
-- the user's workload file. Placeholders are filled per execution:
--   {int:LO:HI}   a uniform integer in [LO, HI]
--   {str:MIN:MAX} a quoted string of MIN to MAX random lower-case letters

local path = os.getenv("PERFLAB_SQL_STATEMENTS")
if path == nil or path == "" then
   error("PERFLAB_SQL_STATEMENTS is not set")
end

local statements, total = {}, 0
for line in io.lines(path) do
   local weight, sql = line:match("^(%d+)\t(.+)$")
   if weight then
      total = total + tonumber(weight)
      statements[#statements + 1] = {upto = total, sql = sql}
   end
end
if total == 0 then
   error("no statements in " .. path)
end

local function fill(kind, low, high)
   low, high = tonumber(low), tonumber(high)
   if kind == "int" then
      return tostring(sysbench.rand.uniform(low, high))
   end
   local letters = {}
   for i = 1, sysbench.rand.uniform(low, high) do
      letters[i] = string.char(sysbench.rand.uniform(97, 122))
   end
   return "'" .. table.concat(letters) .. "'"
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   local pick = sysbench.rand.uniform(1, total)
   for _, statement in ipairs(statements) do
      if pick <= statement.upto then
         con:query((statement.sql:gsub("{(%a+):(%-?%d+):(%-?%d+)}", fill)))
         return
      end
   end
end

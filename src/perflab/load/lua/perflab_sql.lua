-- perflab's `sql` workload: the user's statements, picked at random by weight.
--
-- PERFLAB_SQL_STATEMENTS names a file of `weight<TAB>statement` lines written by perflab from
-- the user's workload file, each followed by `<TAB>name<TAB>literal` lines for its pick lists.
-- Placeholders are filled per execution:
--   {int:LO:HI}   a uniform integer in [LO, HI]
--   {str:MIN:MAX} a quoted string of MIN to MAX random lower-case letters
--   {pick:NAME}   one of the statement's NAME literals, uniformly

local path = os.getenv("PERFLAB_SQL_STATEMENTS")
if path == nil or path == "" then
   error("PERFLAB_SQL_STATEMENTS is not set")
end

local statements, total = {}, 0
for line in io.lines(path) do
   local weight, sql = line:match("^(%d+)\t(.+)$")
   if weight then
      total = total + tonumber(weight)
      statements[#statements + 1] = {upto = total, sql = sql, picks = {}}
   else
      local name, literal = line:match("^\t([%w_]+)\t(.+)$")
      if name and #statements > 0 then
         local picks = statements[#statements].picks
         picks[name] = picks[name] or {}
         table.insert(picks[name], literal)
      end
   end
end
if total == 0 then
   error("no statements in " .. path)
end

local function integer(low, high)
   return tostring(sysbench.rand.uniform(tonumber(low), tonumber(high)))
end

local function letters(low, high)
   local chosen = {}
   for i = 1, sysbench.rand.uniform(tonumber(low), tonumber(high)) do
      chosen[i] = string.char(sysbench.rand.uniform(97, 122))
   end
   return "'" .. table.concat(chosen) .. "'"
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
         -- only the placeholders perflab checked (sqlworkload.py): anything else stays text
         local sql = statement.sql:gsub("{int:(%-?%d+):(%-?%d+)}", integer)
         sql = sql:gsub("{str:(%d+):(%d+)}", letters)
         sql = sql:gsub("{pick:([%w_]+)}", function(name)
            local list = statement.picks[name]
            return list[sysbench.rand.uniform(1, #list)]
         end)
         con:query(sql)
         return
      end
   end
end

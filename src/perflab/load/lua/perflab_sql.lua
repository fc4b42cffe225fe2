-- perflab's `sql` workload: the user's statements, picked at random by weight.
--
-- PERFLAB_SQL_STATEMENTS names the statements file perflab wrote from the user's workload file
-- (read by perflab_statements.lua). Each statement is prepared on the server once per session
-- (a server-side prepared statement: one statement per text, which the server parses), and
-- its parameters are bound per execution, so a value is data and never SQL:
--   {int:LO:HI}   a uniform integer in [LO, HI], bound as BIGINT
--   {str:MIN:MAX} a string of MIN to MAX random lower-case letters, bound as VARCHAR
--   {pick:NAME}   one of the statement's NAME values, uniformly, bound as its list's type

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
   return table.concat(chosen)
end

-- The bind of one parameter, created on `stmt`: its type, and a function that sets it.
-- sysbench draws unsigned 32-bit integers: an {int:} range is drawn as an offset from its low
-- end (perflab keeps ranges that narrow, bounds exact here).
local function binding(stmt, param, picks)
   local types = sysbench.sql.type
   if param.kind == "I" then
      local bind = stmt:bind_create(types.BIGINT)
      return bind, function() bind:set(param.low + uniform(0, param.high - param.low)) end
   elseif param.kind == "S" then
      local bind = stmt:bind_create(types.VARCHAR, param.high + 1)
      return bind, function() bind:set(letters(param.low, param.high)) end
   end
   local list = picks[param.name]
   local integer = list.type == "I"
   local bind = integer and stmt:bind_create(types.BIGINT) or
      stmt:bind_create(types.VARCHAR, list.widest + 1)
   return bind, function()
      local chosen = list[uniform(1, #list)]
      if chosen.null then
         bind:set(nil)
      elseif integer then
         bind:set(tonumber(chosen.value))
      else
         bind:set(chosen.value)
      end
   end
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   prepared = {}
   for i, statement in ipairs(statements) do
      local stmt = con:prepare(statement.text)
      local binds, setters = {}, {}
      for j, param in ipairs(statement.params) do
         binds[j], setters[j] = binding(stmt, param, statement.picks)
      end
      if #binds > 0 then
         stmt:bind_param(unpack(binds))
      end
      prepared[i] = {stmt = stmt, setters = setters}
   end
end

function thread_done()
   for _, entry in ipairs(prepared) do
      entry.stmt:close()
   end
   con:disconnect()
end

function event()
   local pick = uniform(1, total)
   for i, statement in ipairs(statements) do
      if pick <= statement.upto then
         local entry = prepared[i]
         for _, set in ipairs(entry.setters) do
            set()
         end
         entry.stmt:execute()
         return
      end
   end
end

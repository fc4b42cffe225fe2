-- For tests/test_statements_file.py: read a statements file as perflab_sql.lua does, and write
-- back to stdout what it read, in the file's own framing (so that the test can compare bytes),
-- then each statement rendered with the first value of every placeholder (what perflab
-- classifies).
local statements_file = require("perflab_statements")

local function first(part, picks)
   if part.kind == "I" then
      return string.format("%.0f", part.low)
   elseif part.kind == "S" then
      return "'a'"
   end
   return picks[part.name][1]
end

sysbench.cmdline.commands = {dump = {function()
   local out = {}
   local function put(value)
      value = tostring(value)
      out[#out + 1] = #value .. ":" .. value .. ","
   end
   local statements = statements_file.load(os.getenv("PERFLAB_SQL_STATEMENTS"))
   put("perflab-statements/1")
   put(#statements)
   local names = {}
   for _, statement in ipairs(statements) do
      put(statement.weight)
      put(#statement.parts)
      for _, part in ipairs(statement.parts) do
         put(part.kind)
         if part.kind == "T" then put(part.text)
         elseif part.kind == "P" then put(part.name)
         else put(string.format("%.0f", part.low)); put(string.format("%.0f", part.high)) end
      end
      names = {}
      for name in pairs(statement.picks) do names[#names + 1] = name end
      table.sort(names)
      put(#names)
      for _, name in ipairs(names) do
         put(name)
         put(#statement.picks[name])
         for _, literal in ipairs(statement.picks[name]) do put(literal) end
      end
   end
   for _, statement in ipairs(statements) do
      put(statements_file.render(statement, first))
   end
   io.stdout:write("\nPERFLAB-DUMP\n" .. table.concat(out))
end}}

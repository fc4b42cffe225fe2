-- For tests/test_statements_file.py: read a statements file as perflab_sql.lua does, and write
-- back to stdout what it read, in the file's own framing (so that the test can compare bytes).
local statements_file = require("perflab_statements")

sysbench.cmdline.commands = {dump = {function()
   local out = {}
   local function put(value)
      value = tostring(value)
      out[#out + 1] = #value .. ":" .. value .. ","
   end
   local statements = statements_file.load(os.getenv("PERFLAB_SQL_STATEMENTS"))
   put("perflab-statements/2")
   put(#statements)
   for _, statement in ipairs(statements) do
      put(statement.weight)
      put(statement.text)
      put(#statement.params)
      for _, param in ipairs(statement.params) do
         put(param.kind)
         if param.kind == "P" then put(param.name)
         else put(string.format("%.0f", param.low)); put(string.format("%.0f", param.high)) end
      end
      local names = {}
      for name in pairs(statement.picks) do names[#names + 1] = name end
      table.sort(names)
      put(#names)
      for _, name in ipairs(names) do
         local list = statement.picks[name]
         put(name)
         put(list.type)
         put(list.widest)
         put(#list)
         for _, value in ipairs(list) do
            if value.null then put("n") else put("v" .. value.value) end
         end
      end
   end
   io.stdout:write("\nPERFLAB-DUMP\n" .. table.concat(out))
end}}

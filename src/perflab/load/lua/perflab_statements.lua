-- The statements file of perflab's `sql` workload, read exactly as perflab wrote it
-- (load/sqlworkload.py, SqlWorkload.statements_file): a sequence of `LENGTH:BYTES,` fields, the
-- length in bytes, so that no byte of a statement or a value (a NUL, a line break) can end a
-- record or join two. perflab parsed every template once; this module takes the text the
-- server prepares and the values it binds as they are, and parses nothing of the SQL.
--
-- Fields: "perflab-statements/2", the number of statements; per statement its weight, its
-- text (a `?` per parameter), its number of parameters, each ("I" low high | "S" low high |
-- "P" name), its number of pick lists, each a name, its bind type ("I" BIGINT | "S" VARCHAR),
-- its widest value in bytes, a count and that many values ("n" NULL | "v" and the value).

local M = {}

local MAGIC = "perflab-statements/2"

function M.load(path)
   local handle = assert(io.open(path, "rb"))
   local data = handle:read("*a")
   handle:close()
   local pos = 1

   local function damaged(what)
      error(string.format("%s: damaged statements file (%s at byte %d)", path, what, pos), 0)
   end

   local function field()
      local colon = data:find(":", pos, true)
      if colon == nil or colon == pos or colon - pos > 12 then damaged("no length") end
      local length = tonumber(data:sub(pos, colon - 1))
      if length == nil or length < 0 or length % 1 ~= 0 then damaged("a bad length") end
      local stop = colon + length
      if stop + 1 > #data or data:sub(stop + 1, stop + 1) ~= "," then damaged("a cut field") end
      local value = data:sub(colon + 1, stop)
      pos = stop + 2
      return value
   end

   local function number()
      local value = tonumber(field())
      if value == nil or value % 1 ~= 0 then damaged("not an integer") end
      return value
   end

   if field() ~= MAGIC then damaged("not a perflab statements file of this version") end
   local statements, total = {}, 0
   for _ = 1, number() do
      local weight = number()
      if weight < 1 then damaged("a weight below 1") end
      total = total + weight
      local text, params = field(), {}
      for _ = 1, number() do
         local kind = field()
         if kind == "I" or kind == "S" then
            params[#params + 1] = {kind = kind, low = number(), high = number()}
         elseif kind == "P" then
            params[#params + 1] = {kind = "P", name = field()}
         else
            damaged("an unknown parameter")
         end
      end
      local picks = {}
      for _ = 1, number() do
         local name, list = field(), {}
         list.type = field()
         if list.type ~= "I" and list.type ~= "S" then damaged("an unknown bind type") end
         list.widest = number()
         for _ = 1, number() do
            local value = field()
            if value == "n" then
               list[#list + 1] = {null = true}
            elseif value:sub(1, 1) == "v" then
               list[#list + 1] = {value = value:sub(2)}
            else
               damaged("a value neither NULL nor given")
            end
         end
         if #list == 0 then damaged("an empty pick list") end
         picks[name] = list
      end
      for _, param in ipairs(params) do
         if param.kind == "P" and picks[param.name] == nil then damaged("a pick without a list") end
      end
      statements[#statements + 1] = {weight = weight, upto = total, text = text,
                                     params = params, picks = picks}
   end
   if pos ~= #data + 1 then damaged("bytes after the last statement") end
   return statements, total
end

return M

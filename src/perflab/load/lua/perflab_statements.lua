-- The statements file of perflab's `sql` workload, read exactly as perflab wrote it
-- (load/sqlworkload.py, SqlWorkload.statements_file): a sequence of `LENGTH:BYTES,` fields, the
-- length in bytes, so that no byte of a statement (a NUL, a line break) can end a record or
-- join two. perflab parsed every template once into text and placeholders; this module takes
-- those parts as they are and parses nothing of the SQL.
--
-- Fields: "perflab-statements/1", the number of statements; per statement its weight, its
-- number of parts, each part ("T" text | "I" low high | "S" low high | "P" name), its number
-- of pick lists, each a name, a count and that many SQL literals.

local M = {}

local MAGIC = "perflab-statements/1"

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

   if field() ~= MAGIC then damaged("not a perflab statements file") end
   local statements, total = {}, 0
   for _ = 1, number() do
      local weight = number()
      if weight < 1 then damaged("a weight below 1") end
      total = total + weight
      local parts = {}
      for _ = 1, number() do
         local kind = field()
         if kind == "T" then
            parts[#parts + 1] = {kind = "T", text = field()}
         elseif kind == "I" or kind == "S" then
            parts[#parts + 1] = {kind = kind, low = number(), high = number()}
         elseif kind == "P" then
            parts[#parts + 1] = {kind = "P", name = field()}
         else
            damaged("an unknown part")
         end
      end
      local picks = {}
      for _ = 1, number() do
         local name, list = field(), {}
         for _ = 1, number() do
            list[#list + 1] = field()
         end
         if #list == 0 then damaged("an empty pick list") end
         picks[name] = list
      end
      for _, part in ipairs(parts) do
         if part.kind == "P" and picks[part.name] == nil then damaged("a pick without a list") end
      end
      statements[#statements + 1] = {weight = weight, upto = total, parts = parts, picks = picks}
   end
   if pos ~= #data + 1 then damaged("bytes after the last statement") end
   return statements, total
end

-- The statement with each placeholder filled by choose(part, picks).
function M.render(statement, choose)
   local out = {}
   for i, part in ipairs(statement.parts) do
      if part.kind == "T" then
         out[i] = part.text
      else
         out[i] = choose(part, statement.picks)
      end
   end
   return table.concat(out)
end

return M

-- perflab's uniform variant of sysbench's select_random_points.lua (the MariaDB KB's
-- segmented key cache benchmark).
--
-- The original gives each thread its own slice of the key range and draws from the global
-- --rand-type distribution ('special' by default), so what a query reads changes with the
-- thread count. Here every thread draws every point uniformly from the whole key range, so a
-- query means the same thing at 1 thread and at 128.

require("oltp_common")

sysbench.cmdline.options.random_points =
   {"Number of random points in the IN() clause", 10}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   local points = string.rep("?, ", sysbench.opt.random_points - 1) .. "?"
   stmt = con:prepare(string.format(
      "SELECT id, k, c, pad FROM sbtest1 WHERE k IN (%s)", points))
   params = {}
   for j = 1, sysbench.opt.random_points do
      params[j] = stmt:bind_create(sysbench.sql.type.INT)
   end
   stmt:bind_param(unpack(params))
end

function thread_done()
   stmt:close()
   con:disconnect()
end

function event()
   for i = 1, sysbench.opt.random_points do
      params[i]:set(sysbench.rand.uniform(1, sysbench.opt.table_size))
   end
   stmt:execute()
end

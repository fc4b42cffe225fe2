-- perflab's join-limit workload (the MyISAM key-buffer contention benchmark).
--
-- The page's query, run as is against perflab's joinlimit schema (t1: ~260,000 rows, all
-- stat=1; t2: 4,000 rows, all val=5, each with its own t1_id):
--   SELECT name FROM t1, t2 WHERE t2.t1_id = t1.id AND t1.stat=1 AND t2.val = 5 LIMIT 1206,18

sysbench.cmdline.options = {
   offset = {"LIMIT offset", 1206},
   limit = {"LIMIT row count", 18},
}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   query = string.format(
      "SELECT name FROM t1, t2 WHERE t2.t1_id = t1.id AND t1.stat=1 AND t2.val = 5 " ..
      "LIMIT %d,%d", sysbench.opt.offset, sysbench.opt.limit)
end

function thread_done()
   con:disconnect()
end

function event()
   con:query(query)
end

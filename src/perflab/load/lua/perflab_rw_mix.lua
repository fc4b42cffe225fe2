-- perflab's read/write mix on sbtest (the STAR experiment's MySQL tuning notes: read-heavy 99/1,
-- write-heavy 30/70).
--
-- Each event is one statement: with probability --write-share an UPDATE of the indexed column
-- k by primary key, otherwise a point SELECT by primary key. Keys are uniform over the table.

require("oltp_common")

sysbench.cmdline.options.write_share =
   {"Share of events that write (0 to 1)", 0.01}

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
   select_stmt = con:prepare("SELECT c FROM sbtest1 WHERE id = ?")
   select_id = select_stmt:bind_create(sysbench.sql.type.INT)
   select_stmt:bind_param(select_id)
   update_stmt = con:prepare("UPDATE sbtest1 SET k = k + 1 WHERE id = ?")
   update_id = update_stmt:bind_create(sysbench.sql.type.INT)
   update_stmt:bind_param(update_id)
end

function thread_done()
   select_stmt:close()
   update_stmt:close()
   con:disconnect()
end

function event()
   local id = sysbench.rand.uniform(1, sysbench.opt.table_size)
   if sysbench.rand.uniform_double() < sysbench.opt.write_share then
      update_id:set(id)
      update_stmt:execute()
   else
      select_id:set(id)
      select_stmt:execute()
   end
end

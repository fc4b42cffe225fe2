"""perflab health: a live server's counters judged against acceptable ranges, cold and hot."""

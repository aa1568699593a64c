-- Undoes version 2: the shared response cache and every answer in it
-- (the next jobs pay for them again), and the rejected entries.
DROP TABLE tenax_cache;
DROP TABLE tenax_cache_rejected;
DROP TABLE tenax_cache_size;
DROP FUNCTION tenax_cache_count();
DROP FUNCTION tenax_cache_truncated();

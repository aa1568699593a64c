-- Version 2: the LLM response cache, shared by every process on the
-- database (package cache/postgres), so that an answer one worker paid
-- for is served to every other.

-- One row per entry: the answer (value) a call's key names, when it was
-- put, and the bytes it counts toward the cache's bound, kept by the
-- database so that no writer can get it wrong.
CREATE TABLE tenax_cache (
	key    text PRIMARY KEY,
	value  bytea NOT NULL,
	put_at timestamptz NOT NULL DEFAULT now(),
	bytes  integer GENERATED ALWAYS AS (octet_length(key) + octet_length(value)) STORED
);
-- Eviction drops the oldest entries first, and a prune by age reads them.
CREATE INDEX tenax_cache_put_at ON tenax_cache (put_at, key);

-- The entries whose answer proved invalid (the heal loop found it so):
-- out of the cache, kept here with the reason for whoever wants to know
-- what the model got wrong. A later rejection of a key replaces it.
CREATE TABLE tenax_cache_rejected (
	key         text PRIMARY KEY,
	value       bytea NOT NULL,
	reason      text NOT NULL,
	rejected_at timestamptz NOT NULL DEFAULT now()
);

-- The sum of tenax_cache.bytes, in one row the triggers below keep, so
-- that a writer learns whether the cache outgrew its bound without
-- summing the table. Writers lock this row first (SELECT … FOR UPDATE)
-- and so take turns: no two of them deadlock on the entries' rows.
CREATE TABLE tenax_cache_size (
	one   boolean PRIMARY KEY DEFAULT true CHECK (one),
	bytes bigint NOT NULL
);
INSERT INTO tenax_cache_size (bytes) VALUES (0);

-- One statement-level trigger per event (a transition table serves one
-- event only), each adding what its statement's rows added or removed.
CREATE FUNCTION tenax_cache_count() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $b$
BEGIN
	IF TG_OP = 'INSERT' THEN
		UPDATE tenax_cache_size SET bytes = bytes + (SELECT coalesce(sum(bytes), 0) FROM new_rows);
	ELSIF TG_OP = 'UPDATE' THEN
		UPDATE tenax_cache_size SET bytes = bytes
			+ (SELECT coalesce(sum(bytes), 0) FROM new_rows)
			- (SELECT coalesce(sum(bytes), 0) FROM old_rows);
	ELSE
		UPDATE tenax_cache_size SET bytes = bytes - (SELECT coalesce(sum(bytes), 0) FROM old_rows);
	END IF;
	RETURN NULL;
END $b$;
CREATE TRIGGER tenax_cache_count_insert AFTER INSERT ON tenax_cache
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenax_cache_count();
CREATE TRIGGER tenax_cache_count_update AFTER UPDATE ON tenax_cache
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION tenax_cache_count();
CREATE TRIGGER tenax_cache_count_delete AFTER DELETE ON tenax_cache
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION tenax_cache_count();
-- TRUNCATE fires no DELETE trigger: it empties the count too.
CREATE FUNCTION tenax_cache_truncated() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $b$
BEGIN
	UPDATE tenax_cache_size SET bytes = 0;
	RETURN NULL;
END $b$;
CREATE TRIGGER tenax_cache_count_truncate AFTER TRUNCATE ON tenax_cache
	FOR EACH STATEMENT EXECUTE FUNCTION tenax_cache_truncated();

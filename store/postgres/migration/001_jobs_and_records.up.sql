-- Version 1: the store's tables, as tenax made them with CREATE TABLE IF
-- NOT EXISTS before it numbered the store's migrations; a database made
-- then is adopted as this version (adopt.sql).

-- One row per job: its manifest.
CREATE TABLE tenax_jobs (
	id       text PRIMARY KEY,
	created  timestamptz NOT NULL,
	updated  timestamptz NOT NULL,
	manifest jsonb NOT NULL
);
CREATE INDEX tenax_jobs_created ON tenax_jobs (created, id);

-- Every record appended, never updated: the latest of an idx is the first
-- of its (idx, seq DESC) entries, and INCLUDE (failed) lets Outcomes
-- answer from the index alone. A record names its job without a foreign
-- key: checking one took a row lock on the job's row for every record,
-- about a third of a worker's group write (docs/benchmarks.md). The
-- trigger below deletes a job's records with its row instead, as ON
-- DELETE CASCADE did.
CREATE TABLE tenax_records (
	seq    bigserial PRIMARY KEY,
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	failed boolean NOT NULL,
	record json NOT NULL
);
CREATE INDEX tenax_records_latest ON tenax_records (job_id, idx, seq DESC) INCLUDE (failed);

-- A job's notes by kind (an agent's steps): few per job, so a foreign key.
CREATE TABLE tenax_notes (
	seq    bigserial PRIMARY KEY,
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	kind   text NOT NULL,
	note   bytea NOT NULL
);
CREATE INDEX tenax_notes_job ON tenax_notes (job_id, kind, seq);

-- The function keeps the search_path it was created with, so that a
-- session with another one can delete a job too.
CREATE FUNCTION tenax_records_delete_job() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $b$
BEGIN
	DELETE FROM tenax_records WHERE job_id = OLD.id;
	RETURN OLD;
END $b$;
CREATE TRIGGER tenax_records_delete_job AFTER DELETE ON tenax_jobs
	FOR EACH ROW EXECUTE FUNCTION tenax_records_delete_job();

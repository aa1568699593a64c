-- The store's DDL as the last tenax before numbered store migrations ran it at every Open: the schema constant and CascadeSQL("tenax_records") of store/postgres/postgres.go.
CREATE TABLE IF NOT EXISTS tenax_jobs (
	id       text PRIMARY KEY,
	created  timestamptz NOT NULL,
	updated  timestamptz NOT NULL,
	manifest jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS tenax_jobs_created ON tenax_jobs (created, id);
CREATE TABLE IF NOT EXISTS tenax_records (
	seq    bigserial PRIMARY KEY,
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	failed boolean NOT NULL,
	record json NOT NULL
);
CREATE INDEX IF NOT EXISTS tenax_records_latest ON tenax_records (job_id, idx, seq DESC) INCLUDE (failed);
CREATE TABLE IF NOT EXISTS tenax_notes (
	seq    bigserial PRIMARY KEY,
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	kind   text NOT NULL,
	note   bytea NOT NULL
);
CREATE INDEX IF NOT EXISTS tenax_notes_job ON tenax_notes (job_id, kind, seq);

DO $do$
DECLARE fk text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_proc
		WHERE proname = 'tenax_records_delete_job' AND pronamespace = current_schema()::regnamespace) THEN
		EXECUTE $f$CREATE FUNCTION tenax_records_delete_job() RETURNS trigger LANGUAGE plpgsql
			SET search_path FROM CURRENT AS $b$
		BEGIN
			DELETE FROM tenax_records WHERE job_id = OLD.id;
			RETURN OLD;
		END $b$ $f$;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relname = 'tenax_jobs' AND c.relnamespace = current_schema()::regnamespace
		AND t.tgname = 'tenax_records_delete_job') THEN
		CREATE TRIGGER tenax_records_delete_job AFTER DELETE ON tenax_jobs
			FOR EACH ROW EXECUTE FUNCTION tenax_records_delete_job();
	END IF;
	FOR fk IN SELECT conname FROM pg_constraint
		WHERE conrelid = format('%I.tenax_records', current_schema())::regclass AND contype = 'f' LOOP
		EXECUTE format('ALTER TABLE %I.tenax_records DROP CONSTRAINT %I', current_schema(), fk);
	END LOOP;
END $do$;

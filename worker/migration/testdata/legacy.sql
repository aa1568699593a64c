
CREATE TABLE IF NOT EXISTS tenax_queues (
	job_id      text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	queue       text NOT NULL UNIQUE,
	spec_path   text NOT NULL,
	spec_source text NOT NULL,
	format      text NOT NULL,
	round       integer NOT NULL DEFAULT 1,
	created     timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tenax_finals (
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	round  integer NOT NULL,
	PRIMARY KEY (job_id, idx, round)
);
CREATE TABLE IF NOT EXISTS tenax_workers (
	id          text PRIMARY KEY,
	host        text NOT NULL,
	pid         integer NOT NULL,
	jobs        text[] NOT NULL DEFAULT '{}',
	concurrency integer NOT NULL,
	in_flight   integer NOT NULL DEFAULT 0,
	finished    bigint NOT NULL DEFAULT 0,
	started     timestamptz NOT NULL DEFAULT now(),
	heartbeat   timestamptz NOT NULL DEFAULT now(),
	stopped     timestamptz
);
CREATE TABLE IF NOT EXISTS tenax_limits (
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	name   text NOT NULL,
	tat    timestamptz NOT NULL,
	PRIMARY KEY (job_id, name)
);
CREATE TABLE IF NOT EXISTS tenax_breakers (
	job_id    text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	state     text NOT NULL DEFAULT 'closed',
	action    text NOT NULL DEFAULT '',
	reason    text NOT NULL DEFAULT '',
	last_error text NOT NULL DEFAULT '',
	owner     text NOT NULL DEFAULT '',
	decision  text NOT NULL DEFAULT '',
	trips     integer NOT NULL DEFAULT 0,
	updated   timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS tenax_budgets (
	job_id     text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	tokens     bigint NOT NULL DEFAULT 0,
	cost_micro bigint NOT NULL DEFAULT 0,
	held       bigint NOT NULL DEFAULT 0,
	granted    boolean NOT NULL DEFAULT false,
	reached    text NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS tenax_budget_holds (
	job_id    text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	worker_id text NOT NULL,
	held      bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, worker_id)
);
CREATE TABLE IF NOT EXISTS tenax_checkins (
	job_id text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	every  bigint NOT NULL DEFAULT 0,
	done   bigint NOT NULL DEFAULT 0,
	next   bigint NOT NULL DEFAULT 0,
	due    boolean NOT NULL DEFAULT false
);
-- The question an operator is asked (on_trip: prompt), rendered by the
-- worker that tripped, and who answered it: added after the table first
-- shipped, hence ALTER, only when missing (an ALTER takes the table's
-- exclusive lock even when it has nothing to do, and every worker that
-- starts migrates).
DO $$
BEGIN
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'decided_by') THEN
		ALTER TABLE tenax_breakers
			ADD COLUMN IF NOT EXISTS summary    text NOT NULL DEFAULT '',
			ADD COLUMN IF NOT EXISTS failures   text[] NOT NULL DEFAULT '{}',
			ADD COLUMN IF NOT EXISTS decided_by text NOT NULL DEFAULT '';
	END IF;
	-- When a terminal last attended the job (an attached tenax run): a
	-- trip with on_trip unset asks it, as one process on a terminal does.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'attended') THEN
		ALTER TABLE tenax_breakers ADD COLUMN IF NOT EXISTS attended timestamptz;
	END IF;
	-- Why an operator stopped the job outside its breaker (an abort at a
	-- check-in): every worker stops it; a resume clears it.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_breakers' AND column_name = 'stopped') THEN
		ALTER TABLE tenax_breakers ADD COLUMN IF NOT EXISTS stopped text NOT NULL DEFAULT '';
	END IF;
	-- How many times the job was resumed (Client.Requeue).
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_queues' AND column_name = 'resumes') THEN
		ALTER TABLE tenax_queues ADD COLUMN IF NOT EXISTS resumes integer NOT NULL DEFAULT 0;
	END IF;
	-- How many items one River job of the job holds (GroupItems), for
	-- a resume's. Jobs enqueued before it held one.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_queues' AND column_name = 'group_items') THEN
		ALTER TABLE tenax_queues ADD COLUMN IF NOT EXISTS group_items integer NOT NULL DEFAULT 1;
	END IF;
	-- A worker's --rescue-after: without a heartbeat for that long it is
	-- lost (workerAlive). Rows of older workers keep the default's minute.
	IF NOT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'tenax_workers' AND column_name = 'rescue_after') THEN
		ALTER TABLE tenax_workers ADD COLUMN IF NOT EXISTS rescue_after interval NOT NULL DEFAULT '1 minute';
	END IF;
END $$;

DO $do$
DECLARE fk text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_proc
		WHERE proname = 'tenax_finals_delete_job' AND pronamespace = current_schema()::regnamespace) THEN
		EXECUTE $f$CREATE FUNCTION tenax_finals_delete_job() RETURNS trigger LANGUAGE plpgsql
			SET search_path FROM CURRENT AS $b$
		BEGIN
			DELETE FROM tenax_finals WHERE job_id = OLD.id;
			RETURN OLD;
		END $b$ $f$;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relname = 'tenax_jobs' AND c.relnamespace = current_schema()::regnamespace
		AND t.tgname = 'tenax_finals_delete_job') THEN
		CREATE TRIGGER tenax_finals_delete_job AFTER DELETE ON tenax_jobs
			FOR EACH ROW EXECUTE FUNCTION tenax_finals_delete_job();
	END IF;
	FOR fk IN SELECT conname FROM pg_constraint
		WHERE conrelid = format('%I.tenax_finals', current_schema())::regclass AND contype = 'f' LOOP
		EXECUTE format('ALTER TABLE %I.tenax_finals DROP CONSTRAINT %I', current_schema(), fk);
	END LOOP;
END $do$;

CREATE TABLE IF NOT EXISTS tenax_inputs (
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	id     text,
	input  bytea,
	bad    text,
	PRIMARY KEY (job_id, idx)
);

DO $do$
DECLARE fk text;
BEGIN
	IF NOT EXISTS (SELECT 1 FROM pg_proc
		WHERE proname = 'tenax_inputs_delete_job' AND pronamespace = current_schema()::regnamespace) THEN
		EXECUTE $f$CREATE FUNCTION tenax_inputs_delete_job() RETURNS trigger LANGUAGE plpgsql
			SET search_path FROM CURRENT AS $b$
		BEGIN
			DELETE FROM tenax_inputs WHERE job_id = OLD.id;
			RETURN OLD;
		END $b$ $f$;
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
		WHERE c.relname = 'tenax_jobs' AND c.relnamespace = current_schema()::regnamespace
		AND t.tgname = 'tenax_inputs_delete_job') THEN
		CREATE TRIGGER tenax_inputs_delete_job AFTER DELETE ON tenax_jobs
			FOR EACH ROW EXECUTE FUNCTION tenax_inputs_delete_job();
	END IF;
	FOR fk IN SELECT conname FROM pg_constraint
		WHERE conrelid = format('%I.tenax_inputs', current_schema())::regclass AND contype = 'f' LOOP
		EXECUTE format('ALTER TABLE %I.tenax_inputs DROP CONSTRAINT %I', current_schema(), fk);
	END LOOP;
END $do$;

CREATE TABLE IF NOT EXISTS tenax_routes (
	job_id     text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	route      text NOT NULL,
	state      text NOT NULL DEFAULT 'closed',
	open_until timestamptz,
	trips      integer NOT NULL DEFAULT 0,
	cooldown   timestamptz,
	updated    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (job_id, route)
);

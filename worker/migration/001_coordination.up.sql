-- Version 1: the tables workers coordinate through, beside the store's
-- tenax_jobs and tenax_records and River's river_* tables. This is the
-- schema tenax made with CREATE TABLE IF NOT EXISTS before it numbered
-- its migrations; a database made then is adopted as this version
-- (adopt.sql). What each table is for: worker/client.go.

-- One row per job run by workers: its River queue, the spec source
-- workers build the task from, its round, how many times it was resumed
-- and how many items one River job of it holds.
CREATE TABLE tenax_queues (
	job_id      text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	queue       text NOT NULL UNIQUE,
	spec_path   text NOT NULL,
	spec_source text NOT NULL,
	format      text NOT NULL,
	round       integer NOT NULL DEFAULT 1,
	created     timestamptz NOT NULL DEFAULT now(),
	resumes     integer NOT NULL DEFAULT 0,
	group_items integer NOT NULL DEFAULT 1
);

-- One row per (job, idx, round) that has its final record. No foreign
-- key (one checked per row was a third of a group's write): a trigger
-- on tenax_jobs deletes a deleted job's rows.
CREATE TABLE tenax_finals (
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	round  integer NOT NULL,
	PRIMARY KEY (job_id, idx, round)
);

CREATE TABLE tenax_workers (
	id           text PRIMARY KEY,
	host         text NOT NULL,
	pid          integer NOT NULL,
	jobs         text[] NOT NULL DEFAULT '{}',
	concurrency  integer NOT NULL,
	in_flight    integer NOT NULL DEFAULT 0,
	finished     bigint NOT NULL DEFAULT 0,
	started      timestamptz NOT NULL DEFAULT now(),
	heartbeat    timestamptz NOT NULL DEFAULT now(),
	stopped      timestamptz,
	rescue_after interval NOT NULL DEFAULT '1 minute'
);

CREATE TABLE tenax_limits (
	job_id text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	name   text NOT NULL,
	tat    timestamptz NOT NULL,
	PRIMARY KEY (job_id, name)
);

CREATE TABLE tenax_breakers (
	job_id     text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	state      text NOT NULL DEFAULT 'closed',
	action     text NOT NULL DEFAULT '',
	reason     text NOT NULL DEFAULT '',
	last_error text NOT NULL DEFAULT '',
	owner      text NOT NULL DEFAULT '',
	decision   text NOT NULL DEFAULT '',
	trips      integer NOT NULL DEFAULT 0,
	updated    timestamptz NOT NULL DEFAULT now(),
	summary    text NOT NULL DEFAULT '',
	failures   text[] NOT NULL DEFAULT '{}',
	decided_by text NOT NULL DEFAULT '',
	attended   timestamptz,
	stopped    text NOT NULL DEFAULT ''
);

CREATE TABLE tenax_budgets (
	job_id     text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	tokens     bigint NOT NULL DEFAULT 0,
	cost_micro bigint NOT NULL DEFAULT 0,
	held       bigint NOT NULL DEFAULT 0,
	granted    boolean NOT NULL DEFAULT false,
	reached    text NOT NULL DEFAULT ''
);

CREATE TABLE tenax_budget_holds (
	job_id    text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	worker_id text NOT NULL,
	held      bigint NOT NULL DEFAULT 0,
	PRIMARY KEY (job_id, worker_id)
);

CREATE TABLE tenax_checkins (
	job_id text PRIMARY KEY REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	every  bigint NOT NULL DEFAULT 0,
	done   bigint NOT NULL DEFAULT 0,
	next   bigint NOT NULL DEFAULT 0,
	due    boolean NOT NULL DEFAULT false
);

-- The items' inputs, byte for byte; no foreign key, as tenax_finals.
CREATE TABLE tenax_inputs (
	job_id text NOT NULL,
	idx    bigint NOT NULL,
	id     text,
	input  bytea,
	bad    text,
	PRIMARY KEY (job_id, idx)
);

CREATE TABLE tenax_routes (
	job_id     text NOT NULL REFERENCES tenax_jobs (id) ON DELETE CASCADE,
	route      text NOT NULL,
	state      text NOT NULL DEFAULT 'closed',
	open_until timestamptz,
	trips      integer NOT NULL DEFAULT 0,
	cooldown   timestamptz,
	updated    timestamptz NOT NULL DEFAULT now(),
	PRIMARY KEY (job_id, route)
);

-- The triggers that stand for the foreign keys tenax_finals and
-- tenax_inputs do not have; named as store/postgres.CascadeSQL names
-- them, which made them before.
CREATE FUNCTION tenax_finals_delete_job() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $b$
BEGIN
	DELETE FROM tenax_finals WHERE job_id = OLD.id;
	RETURN OLD;
END $b$;
CREATE TRIGGER tenax_finals_delete_job AFTER DELETE ON tenax_jobs
	FOR EACH ROW EXECUTE FUNCTION tenax_finals_delete_job();

CREATE FUNCTION tenax_inputs_delete_job() RETURNS trigger LANGUAGE plpgsql
	SET search_path FROM CURRENT AS $b$
BEGIN
	DELETE FROM tenax_inputs WHERE job_id = OLD.id;
	RETURN OLD;
END $b$;
CREATE TRIGGER tenax_inputs_delete_job AFTER DELETE ON tenax_jobs
	FOR EACH ROW EXECUTE FUNCTION tenax_inputs_delete_job();

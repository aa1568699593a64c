-- Version 4: the rest of what a job's workers share is announced as its
-- breaker is (version 2), as its transaction commits, on channel
-- tenax_shared with the payload "schema job_id part": a shared 429
-- cooldown extended (part cooldown, tenax_limits' row cooldown), the
-- budget reached or reset (budget, tenax_budgets.reached), a terminal's
-- check-ins begun or ended (checkins, tenax_checkins.every), a route's
-- breaker or cooldown (routes, tenax_routes) and a resume (resume,
-- tenax_queues.resumes). Each worker LISTENs and reads that part at
-- once; its poll stays, slow, as the safety net of a lost connection.
-- The rows every call or item writes (the request and token schedules,
-- the spend and holds, the check-in count) announce nothing: each WHEN
-- names only the columns a worker acts on.
CREATE FUNCTION tenax_shared_notify() RETURNS trigger LANGUAGE plpgsql AS $b$
BEGIN
	PERFORM pg_notify('tenax_shared', TG_TABLE_SCHEMA || ' ' || NEW.job_id || ' ' || TG_ARGV[0]);
	RETURN NULL;
END $b$;
CREATE TRIGGER tenax_limits_notify AFTER UPDATE ON tenax_limits
	FOR EACH ROW WHEN (NEW.name = 'cooldown' AND NEW.tat > OLD.tat)
	EXECUTE FUNCTION tenax_shared_notify('cooldown');
CREATE TRIGGER tenax_budgets_notify AFTER UPDATE ON tenax_budgets
	FOR EACH ROW WHEN (OLD.reached IS DISTINCT FROM NEW.reached)
	EXECUTE FUNCTION tenax_shared_notify('budget');
CREATE TRIGGER tenax_checkins_notify AFTER UPDATE ON tenax_checkins
	FOR EACH ROW WHEN (OLD.every IS DISTINCT FROM NEW.every)
	EXECUTE FUNCTION tenax_shared_notify('checkins');
CREATE TRIGGER tenax_checkins_notify_insert AFTER INSERT ON tenax_checkins
	FOR EACH ROW WHEN (NEW.every > 0)
	EXECUTE FUNCTION tenax_shared_notify('checkins');
CREATE TRIGGER tenax_routes_notify AFTER UPDATE ON tenax_routes
	FOR EACH ROW WHEN ((OLD.state, OLD.open_until, OLD.cooldown) IS DISTINCT FROM (NEW.state, NEW.open_until, NEW.cooldown))
	EXECUTE FUNCTION tenax_shared_notify('routes');
CREATE TRIGGER tenax_queues_notify AFTER UPDATE ON tenax_queues
	FOR EACH ROW WHEN (OLD.resumes IS DISTINCT FROM NEW.resumes)
	EXECUTE FUNCTION tenax_shared_notify('resume');

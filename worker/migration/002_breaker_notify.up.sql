-- Version 2: a change to a job's shared breaker (a trip, an answer, its
-- closing) or an operator's stop is announced, as its transaction
-- commits, on channel tenax_breakers with the payload "schema job_id":
-- every worker LISTENs and reads the job's breaker at once, instead of
-- at its next poll (the poll stays, for what a lost connection missed).
-- Only those columns: attended is written by an attending terminal at
-- every tick, and means nothing to the workers.
CREATE FUNCTION tenax_breakers_notify() RETURNS trigger LANGUAGE plpgsql AS $b$
BEGIN
	PERFORM pg_notify('tenax_breakers', TG_TABLE_SCHEMA || ' ' || NEW.job_id);
	RETURN NULL;
END $b$;
CREATE TRIGGER tenax_breakers_notify AFTER UPDATE ON tenax_breakers
	FOR EACH ROW WHEN ((OLD.state, OLD.action, OLD.owner, OLD.decision, OLD.trips, OLD.stopped)
		IS DISTINCT FROM (NEW.state, NEW.action, NEW.owner, NEW.decision, NEW.trips, NEW.stopped))
	EXECUTE FUNCTION tenax_breakers_notify();
-- A row inserted already stopped (Client.Stop before any worker made it).
CREATE TRIGGER tenax_breakers_notify_insert AFTER INSERT ON tenax_breakers
	FOR EACH ROW WHEN (NEW.state <> 'closed' OR NEW.stopped <> '')
	EXECUTE FUNCTION tenax_breakers_notify();

-- Version 3: an operator's pause of a job run by workers (`tenax pause
-- JOB`, the page's Pause): paused_by names who paused it and paused_at
-- since when, until `tenax continue` clears them and names who in
-- continued_by. A pause is announced on channel tenax_breakers as the
-- breaker's changes are (version 2), so that every worker holds the
-- job's engine at once, and lets it go on at once on continue.
ALTER TABLE tenax_breakers
	ADD COLUMN paused_by    text NOT NULL DEFAULT '',
	ADD COLUMN paused_at    timestamptz,
	ADD COLUMN continued_by text NOT NULL DEFAULT '';
DROP TRIGGER tenax_breakers_notify ON tenax_breakers;
CREATE TRIGGER tenax_breakers_notify AFTER UPDATE ON tenax_breakers
	FOR EACH ROW WHEN ((OLD.state, OLD.action, OLD.owner, OLD.decision, OLD.trips, OLD.stopped, OLD.paused_by)
		IS DISTINCT FROM (NEW.state, NEW.action, NEW.owner, NEW.decision, NEW.trips, NEW.stopped, NEW.paused_by))
	EXECUTE FUNCTION tenax_breakers_notify();
DROP TRIGGER tenax_breakers_notify_insert ON tenax_breakers;
CREATE TRIGGER tenax_breakers_notify_insert AFTER INSERT ON tenax_breakers
	FOR EACH ROW WHEN (NEW.state <> 'closed' OR NEW.stopped <> '' OR NEW.paused_by <> '')
	EXECUTE FUNCTION tenax_breakers_notify();

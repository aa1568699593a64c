-- Version 3 down: no operator's pause; the triggers announce what
-- version 2's did.
DROP TRIGGER tenax_breakers_notify_insert ON tenax_breakers;
DROP TRIGGER tenax_breakers_notify ON tenax_breakers;
ALTER TABLE tenax_breakers
	DROP COLUMN continued_by,
	DROP COLUMN paused_at,
	DROP COLUMN paused_by;
CREATE TRIGGER tenax_breakers_notify AFTER UPDATE ON tenax_breakers
	FOR EACH ROW WHEN ((OLD.state, OLD.action, OLD.owner, OLD.decision, OLD.trips, OLD.stopped)
		IS DISTINCT FROM (NEW.state, NEW.action, NEW.owner, NEW.decision, NEW.trips, NEW.stopped))
	EXECUTE FUNCTION tenax_breakers_notify();
CREATE TRIGGER tenax_breakers_notify_insert AFTER INSERT ON tenax_breakers
	FOR EACH ROW WHEN (NEW.state <> 'closed' OR NEW.stopped <> '')
	EXECUTE FUNCTION tenax_breakers_notify();

-- Version 2 down: workers learn of breaker changes by their poll alone.
DROP TRIGGER tenax_breakers_notify_insert ON tenax_breakers;
DROP TRIGGER tenax_breakers_notify ON tenax_breakers;
DROP FUNCTION tenax_breakers_notify();

-- Version 4 down: workers learn of cooldowns, budgets, check-ins, routes
-- and resumes by their poll alone.
DROP TRIGGER tenax_queues_notify ON tenax_queues;
DROP TRIGGER tenax_routes_notify ON tenax_routes;
DROP TRIGGER tenax_checkins_notify_insert ON tenax_checkins;
DROP TRIGGER tenax_checkins_notify ON tenax_checkins;
DROP TRIGGER tenax_budgets_notify ON tenax_budgets;
DROP TRIGGER tenax_limits_notify ON tenax_limits;
DROP FUNCTION tenax_shared_notify();

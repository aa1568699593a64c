-- Version 1 down: the workers' tables go, and every job's queue,
-- inputs, finals, workers, limits, breakers, budgets and check-ins with
-- them. The store's tenax_jobs and tenax_records stay (the records are
-- the job's results), and so do River's tables (River's own migrations).
DROP TRIGGER tenax_inputs_delete_job ON tenax_jobs;
DROP FUNCTION tenax_inputs_delete_job();
DROP TRIGGER tenax_finals_delete_job ON tenax_jobs;
DROP FUNCTION tenax_finals_delete_job();
DROP TABLE tenax_routes;
DROP TABLE tenax_inputs;
DROP TABLE tenax_checkins;
DROP TABLE tenax_budget_holds;
DROP TABLE tenax_budgets;
DROP TABLE tenax_breakers;
DROP TABLE tenax_limits;
DROP TABLE tenax_workers;
DROP TABLE tenax_finals;
DROP TABLE tenax_queues;

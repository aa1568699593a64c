-- Undoes version 1: every job and its records. The workers' tables refer
-- to tenax_jobs, so this fails while they are there: the workers' line
-- goes down to 0 first.
DROP TABLE tenax_notes;
DROP TABLE tenax_records;
DROP TABLE tenax_jobs;
DROP FUNCTION tenax_records_delete_job();

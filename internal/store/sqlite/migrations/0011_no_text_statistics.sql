-- PostgreSQL's migration 0011 stops planner statistics from sampling
-- erasable text. SQLite keeps no such samples unless ANALYZE runs, which
-- memgate never does; the number is kept in step with PostgreSQL's.
SELECT 1;

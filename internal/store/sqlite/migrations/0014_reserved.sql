-- 0014_reserved: placeholder so this branch (h23b) can use its assigned
-- migration number 0015; it does nothing. Drop it at merge when the real
-- 0014 exists.
SELECT 1;

\set x random(1, 99937)
BEGIN;
UPDATE t SET v = v + 1, state = 'done', updated_at = now() WHERE id BETWEEN :x AND :x + 63;
INSERT INTO hist(task_id, kind) VALUES (:x, 'finished');
INSERT INTO hist(task_id, kind) VALUES (:x + 1, 'event');
INSERT INTO hist(task_id, kind) VALUES (:x + 2, 'event');
SELECT pg_notify('tasker_task_finished', md5(random()::text || g)) FROM generate_series(1, :notifies) g;
END;

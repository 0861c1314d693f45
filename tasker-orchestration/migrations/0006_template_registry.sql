-- Templates are registered at run time (by workers when they start, by users through the API
-- and CLI, by orchestrators from their --templates folders), so each version records who
-- registered it. A version is immutable from here on: registering inserts a new version or
-- confirms an identical one, and never rewrites a definition that tasks may have started from.
ALTER TABLE task_templates
    ADD COLUMN registered_by text CHECK (char_length(registered_by) BETWEEN 1 AND 256);

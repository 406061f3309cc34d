-- Issue 18: a failed image build says why in a stable code (the jail
-- refused a connection or a write, or a step failed) and what to do.

ALTER TABLE images ADD COLUMN failure_code TEXT NOT NULL DEFAULT '';
ALTER TABLE images ADD COLUMN failure_hint TEXT NOT NULL DEFAULT '';

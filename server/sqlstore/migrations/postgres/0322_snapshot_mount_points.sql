-- Where the sandbox a snapshot was taken of had volumes mounted (a JSON
-- array of paths, '' for none): a restore removes the empty mount points
-- its copy holds. Snapshots taken before keep ''.
ALTER TABLE snapshots ADD COLUMN mount_points TEXT NOT NULL DEFAULT '';

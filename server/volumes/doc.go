// Package volumes serves persistent volumes: creating, listing and
// deleting them (routes.go), and for the sandbox lifecycle checking a
// create's volume mounts (ValidateMounts) and recording them (Attach).
// The driver holds their data (model.VolumeDriver); the store their
// records (model.VolumeStore).
package volumes

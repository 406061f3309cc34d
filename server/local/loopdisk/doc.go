//go:build linux

// Package loopdisk owns the local driver's disks as files on the host:
// sandbox and volume disks as sparse ext4 images made from one formatted
// template per size (Images), cloned with FICLONE where the filesystem has
// reflinks or copied sparsely (CloneFile), attached to auto-clearing loop
// devices and mounted (Mount, MountNew, Unmount); the clone pool, a
// loop-mounted XFS with reflinks holding them (MountClonePool), and the
// trim that gives its freed blocks back to the host (PoolTrim); an image's
// runs of data (DataRuns), their hash (HashData) and the portable form
// that leaves the holes out (Export, Import). It knows
// nothing of sandboxes: server/local decides where each image lives.
//
// Linux only, as the local driver is: every file is constrained to linux
// (loop devices, mounts, XFS ioctls), so the package is left out of darwin
// builds deliberately rather than failing them; nothing released for
// darwin imports it (TestLinuxOnlyPackages).
package loopdisk

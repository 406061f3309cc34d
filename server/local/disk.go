//go:build linux

package local

import "os"

// Storage quota mechanisms (Config.Storage).
const (
	StorageAuto  = ""      // loop when possible (root, /dev/loop-control, mkfs.ext4), else tmpfs
	StorageLoop  = "loop"  // an ext4 image per sandbox, loop-mounted on the host
	StorageTmpfs = "tmpfs" // a size-limited tmpfs inside the jail (memory, not disk)
)

// Files of a sandbox with a loop-mounted disk, in its directory.
const (
	diskImage = "disk.img" // sparse ext4 image of the quota's size
	diskMount = "disk"     // its mount point; holds workspace/ and outputs/
)

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

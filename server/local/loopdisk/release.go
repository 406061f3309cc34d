package loopdisk

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// poolReleaseWait bounds how long MountClonePool waits for the previous
// mount of the pool to let go of its image. After `boxkite down` the
// pool's filesystem lives on, lazily unmounted, until the last sandbox
// disk inside it is closed, and XFS refuses a second mount of the same
// filesystem (same UUID) meanwhile. The next server's start is within
// `boxkite up`'s 15 s ready timeout.
const poolReleaseWait = 10 * time.Second

// errImageBound is an image still attached to a loop device.
var errImageBound = errors.New("still attached to a loop device")

// waitImageReleased returns once no loop device has img as its backing
// file, or errImageBound after wait.
func waitImageReleased(img string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		bound, err := imageBound(img)
		if err != nil || bound == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is %w (%s) after %s: a previous mount of it has not let go", img, errImageBound, bound, wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// imageBound returns the loop device whose backing file is img, or "".
// Devices are matched by the backing file's device and inode, which
// LOOP_GET_STATUS64 reports whatever path the image was attached by.
func imageBound(img string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(img, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", img, err)
	}
	devs, err := filepath.Glob("/sys/block/loop*/loop/backing_file")
	if err != nil {
		return "", err
	}
	for _, p := range devs {
		name := strings.Split(strings.TrimPrefix(p, "/sys/block/"), "/")[0]
		dev, err := os.OpenFile("/dev/"+name, os.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone meanwhile, or no node for it here
		}
		info, err := unix.IoctlLoopGetStatus64(int(dev.Fd()))
		dev.Close()
		if err == nil && info.Device == st.Dev && info.Inode == st.Ino {
			return "/dev/" + name, nil
		}
	}
	return "", nil
}

//go:build linux

package loopdisk

import (
	"errors"
	"fmt"
	"os"
	"time"
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

// imageBound returns the loop device img is attached to, or "".
func imageBound(img string) (string, error) {
	f, err := os.Open(img)
	if err != nil {
		return "", fmt.Errorf("open %s: %w", img, err)
	}
	defer f.Close()
	dev, err := attachedLoop(f)
	if err != nil || dev == nil {
		return "", err
	}
	defer dev.Close()
	return dev.Name(), nil
}

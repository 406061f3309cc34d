package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// parseHumanDuration reads durations as people type them: 30s, 5m, 2h,
// 1h30m, 2d. A bare number is counted in bareUnit (seconds for --timeout,
// minutes for --lifetime), for users of the reference CLI's integer flags.
func parseHumanDuration(s string, bareUnit time.Duration) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration")
	}
	if n, err := strconv.ParseUint(s, 10, 32); err == nil {
		return positive(time.Duration(n) * bareUnit)
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseUint(days, 10, 16)
		if err != nil {
			return 0, fmt.Errorf("invalid duration %q", s)
		}
		return positive(time.Duration(n) * 24 * time.Hour)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (use e.g. 30s, 5m, 2h)", s)
	}
	return positive(d)
}

func positive(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, errors.New("the duration must be positive")
	}
	return d, nil
}

// wholeUnits converts d to a whole number of units, rounding up so that
// "90s" is 2 minutes of lifetime, never 1.
func wholeUnits(d, unit time.Duration) int {
	return int(math.Ceil(float64(d) / float64(unit)))
}

// durationValue is a pflag.Value for human durations. Zero means unset.
type durationValue struct {
	d        *time.Duration
	bareUnit time.Duration
	typed    string // as given, for messages: "366d", not "8784h"
}

func newDurationValue(p *time.Duration, def, bareUnit time.Duration) *durationValue {
	*p = def
	return &durationValue{d: p, bareUnit: bareUnit}
}

func (v *durationValue) Set(s string) error {
	d, err := parseHumanDuration(s, v.bareUnit)
	if err != nil {
		return err
	}
	*v.d = d
	v.typed = s
	return nil
}

func (v *durationValue) String() string {
	if v.d == nil || *v.d == 0 {
		return "" // pflag then shows no default
	}
	return compactDuration(*v.d)
}

func (v *durationValue) Type() string { return "duration" }

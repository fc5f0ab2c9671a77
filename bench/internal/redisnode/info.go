package redisnode

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Snapshot is what INFO cpu commandstats says about one server at one
// instant.
type Snapshot struct {
	// CPU is used_cpu_user + used_cpu_sys, in seconds.
	CPU float64
	// Calls is the number of calls of each command (cmdstat_<name>).
	// Redis counts commands run inside scripts here too.
	Calls map[string]uint64
}

// TakeSnapshot sends one INFO cpu commandstats to c. That INFO is counted
// in the next snapshot's Calls["info"], not in this one's.
func TakeSnapshot(ctx context.Context, c *redis.Client) (Snapshot, error) {
	s, err := c.Info(ctx, "cpu", "commandstats").Result()
	if err != nil {
		return Snapshot{}, fmt.Errorf("INFO on %s: %w", c.Options().Addr, err)
	}
	return parseSnapshot(s)
}

func parseSnapshot(s string) (Snapshot, error) {
	snap := Snapshot{Calls: make(map[string]uint64)}
	for line := range strings.Lines(s) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch {
		case k == "used_cpu_user" || k == "used_cpu_sys":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return Snapshot{}, fmt.Errorf("INFO %s: %q: %w", k, v, err)
			}
			snap.CPU += f
		case strings.HasPrefix(k, "cmdstat_"):
			// cmdstat_set:calls=2,usec=12,usec_per_call=6.00,...
			for _, field := range strings.Split(v, ",") {
				if n, ok := strings.CutPrefix(field, "calls="); ok {
					calls, err := strconv.ParseUint(n, 10, 64)
					if err != nil {
						return Snapshot{}, fmt.Errorf("INFO %s: %q: %w", k, v, err)
					}
					snap.Calls[strings.TrimPrefix(k, "cmdstat_")] = calls
				}
			}
		}
	}
	return snap, nil
}

// Sub returns the difference s − earlier: CPU seconds and calls per
// command in between.
func (s Snapshot) Sub(earlier Snapshot) Snapshot {
	d := Snapshot{CPU: s.CPU - earlier.CPU, Calls: make(map[string]uint64, len(s.Calls))}
	for k, v := range s.Calls {
		if dv := v - earlier.Calls[k]; dv > 0 {
			d.Calls[k] = dv
		}
	}
	return d
}

// Add returns the sum of s and o.
func (s Snapshot) Add(o Snapshot) Snapshot {
	sum := Snapshot{CPU: s.CPU + o.CPU, Calls: make(map[string]uint64, len(s.Calls))}
	for k, v := range s.Calls {
		sum.Calls[k] += v
	}
	for k, v := range o.Calls {
		sum.Calls[k] += v
	}
	return sum
}

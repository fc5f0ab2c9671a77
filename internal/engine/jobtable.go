package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"
)

// JobSpec is one job of a published job table (Keyspace.JobTable), as
// JSON: its spec as given to Add with its fields single-spaced, the zone
// it is read in, and its options as the scheduler applied them (its
// Entry's): two replicas whose jobs differ in any of them publish two
// tables.
type JobSpec struct {
	Spec         string        `json:"spec"`
	Zone         string        `json:"zone,omitempty"`
	LockTTL      time.Duration `json:"lock_ttl_ns,omitempty"`
	RunTimeout   time.Duration `json:"run_timeout_ns,omitempty"`
	MisfireGrace time.Duration `json:"misfire_grace_ns,omitempty"`
	CatchUp      time.Duration `json:"catch_up_ns,omitempty"`
	Attempts     int           `json:"attempts,omitempty"`
	Backoff      time.Duration `json:"backoff_ns,omitempty"`
	Tags         []string      `json:"tags,omitempty"` // sorted (scheduler.WithTags)
	// Limit and Permits are its cluster limit (scheduler.WithClusterLimit).
	Limit   string `json:"limit,omitempty"`
	Permits int    `json:"permits,omitempty"`
}

// EncodeJobTable returns the job table jobs (name → spec) as its hash
// holds it, each job's JobSpec as JSON, and the digest of exactly those
// fields (JobTableDigest), under which it is published.
func EncodeJobTable(jobs map[string]JobSpec) (fields map[string]string, digest string) {
	fields = make(map[string]string, len(jobs))
	for name, js := range jobs {
		b, _ := json.Marshal(js) // strings and numbers always encode
		fields[name] = string(b)
	}
	return fields, JobTableDigest(fields)
}

// JobTableDigest returns 12 hex characters of the SHA-256 of a job table's
// hash fields (name → value), in name order: the same jobs give the same
// digest whatever order they were added in, and any job added, removed or
// changed changes it.
func JobTableDigest(fields map[string]string) string {
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	for _, name := range names {
		fmt.Fprintf(h, "%q %q\n", name, fields[name])
	}
	return hex.EncodeToString(h.Sum(nil)[:6])
}

// PublishJobTable writes the job table fields (EncodeJobTable) at key, in
// one round trip of two commands (HSET, PEXPIRE), and gives it a TTL of
// ttl.
func (n *Node) PublishJobTable(ctx context.Context, key string, fields map[string]string, ttl time.Duration) error {
	args := make([]any, 0, 2*len(fields))
	for name, v := range fields {
		args = append(args, name, v)
	}
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, key, args...)
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return n.fail("job table", key, err)
	}
	return nil
}

// RenewJobTable gives the job table at key a TTL of ttl, in one command
// (PEXPIRE), and reports whether the node had it: false when it lost it
// (restarted empty, or the key expired), so that it is written again.
func (n *Node) RenewJobTable(ctx context.Context, key string, ttl time.Duration) (bool, error) {
	ok, err := n.client.PExpire(ctx, key, ttl).Result()
	if err != nil {
		return false, n.fail("job table", key, err)
	}
	return ok, nil
}

// JobTable reads the job table at key: name → spec and zone. A field that
// is not a JobSpec is left out.
func (n *Node) JobTable(ctx context.Context, key string) (map[string]JobSpec, error) {
	raw, err := n.client.HGetAll(ctx, key).Result()
	if err != nil {
		return nil, n.fail("job table", key, err)
	}
	out := make(map[string]JobSpec, len(raw))
	for name, v := range raw {
		var js JobSpec
		if json.Unmarshal([]byte(v), &js) == nil && js.Spec != "" {
			out[name] = js
		}
	}
	return out, nil
}

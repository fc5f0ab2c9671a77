package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"
)

// JobSpec is one job of a published job table (Keyspace.JobTable), as
// JSON: its spec as given to Add, and the zone it is read in.
type JobSpec struct {
	Spec string `json:"spec"`
	Zone string `json:"zone,omitempty"`
}

// PublishJobTable writes the job table jobs (name → spec and zone) at key
// and gives it a TTL of ttl; with refresh, it only renews the TTL (the
// table of a digest never changes).
func (n *Node) PublishJobTable(ctx context.Context, key string, jobs map[string]JobSpec, refresh bool, ttl time.Duration) error {
	_, err := n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		if !refresh && len(jobs) > 0 {
			fields := make([]any, 0, 2*len(jobs))
			for name, js := range jobs {
				b, _ := json.Marshal(js) // two strings always encode
				fields = append(fields, name, string(b))
			}
			p.HSet(ctx, key, fields...)
		}
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return n.fail("job table", key, err)
	}
	return nil
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

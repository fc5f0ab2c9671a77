package mutex

import (
	"slices"
	"testing"

	"github.com/redcron/redcron/internal/engine"
)

// TestByShard: ends grouped by shard, the shards in the order first seen,
// each shard's ends in their order.
func TestByShard(t *testing.T) {
	end := func(state, name string) partEnd {
		return partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name, State: state}}}
	}
	es := []partEnd{end("s2", "a"), end("s1", "b"), end("s2", "c"), end("s3", "d"), end("s1", "e"), end("s2", "f")}
	var got []string
	for _, e := range byShard(es) {
		got = append(got, e.Keys.State+"/"+e.Keys.Name)
	}
	if want := []string{"s2/a", "s2/c", "s2/f", "s1/b", "s1/e", "s3/d"}; !slices.Equal(got, want) {
		t.Errorf("byShard: %q, want %q", got, want)
	}
}

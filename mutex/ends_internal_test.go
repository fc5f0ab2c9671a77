package mutex

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// TestByShard: ends grouped by shard, the shards in the order first seen,
// each shard's ends in their order.
func TestByShard(t *testing.T) {
	end := func(state, name string) *partEnd {
		return &partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name, State: state}}}
	}
	es := []*partEnd{end("s2", "a"), end("s1", "b"), end("s2", "c"), end("s3", "d"), end("s1", "e"), end("s2", "f")}
	var got []string
	for _, e := range byShard(es) {
		got = append(got, e.Keys.State+"/"+e.Keys.Name)
	}
	if want := []string{"s2/a", "s2/c", "s2/f", "s1/b", "s1/e", "s3/d"}; !slices.Equal(got, want) {
		t.Errorf("byShard: %q, want %q", got, want)
	}
}

// TestTakeOld: the ends queued at the due time or before leave, by node
// and each shard's in their order; the others stay, and the oldest of them
// says when the next flush is due.
func TestTakeOld(t *testing.T) {
	t0 := time.Unix(1000, 0)
	end := func(state, name string, at time.Duration) *partEnd {
		return &partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name, State: state}}, queued: t0.Add(at)}
	}
	pending := (&ends{}).queue(3)
	pending.add(0, end("s1", "a", 0), end("s2", "b", 3*time.Second), end("s1", "c", time.Second), end("s2", "f", 0))
	pending.add(2, end("s1", "d", 2*time.Second), end("s1", "e", 4*time.Second))
	old, next := takeOld(pending, t0.Add(time.Second))
	names := func(es [][]*partEnd) (out []string) {
		for i, l := range es {
			for _, e := range l {
				out = append(out, strconv.Itoa(i)+e.Keys.State+e.Keys.Name)
			}
		}
		slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(a[:3], b[:3]) }) // shards in any order
		return out
	}
	left := func() [][]*partEnd {
		out := make([][]*partEnd, len(pending))
		for i, m := range pending {
			for _, es := range m {
				out[i] = append(out[i], es...)
			}
		}
		return out
	}
	if got, want := names(old), []string{"0s1a", "0s1c", "0s2f"}; !slices.Equal(got, want) {
		t.Errorf("taken %q, want %q", got, want)
	}
	if got, want := names(left()), []string{"0s2b", "2s1d", "2s1e"}; !slices.Equal(got, want) {
		t.Errorf("left %q, want %q", got, want)
	}
	if want := t0.Add(2 * time.Second); !next.Equal(want) {
		t.Errorf("next flush from %v, want %v", next, want)
	}
	if _, next := takeOld(pending, t0.Add(time.Hour)); !next.IsZero() || len(names(left())) != 0 {
		t.Errorf("all due: %q left, next %v", names(left()), next)
	}
}

// TestTakeEnds: a claim takes the pending ends of its shards, and the
// frees of claims given up of any shard, each shard's in their order; the
// other shards' stay.
func TestTakeEnds(t *testing.T) {
	r := &Redlock{nodes: make([]*engine.Node, 2)}
	end := func(state, name string, occurrence int64) *partEnd {
		return &partEnd{FreeRequest: engine.FreeRequest{Keys: engine.LockKeys{Name: name, State: state}, Occurrence: occurrence}}
	}
	r.requeue(0, []*partEnd{end("s1", "a", 0), end("s2", "b", 0), end("s1", "c", 0), end("s3", "free", 7)})
	r.requeue(1, []*partEnd{end("s2", "d", 0), end("s1", "e", 0)})
	r.ends.timer.Stop()
	names := func(es [][]*partEnd) (out []string) {
		for i, l := range es {
			for _, e := range l {
				out = append(out, strconv.Itoa(i)+e.Keys.State+e.Keys.Name)
			}
		}
		slices.SortStableFunc(out, func(a, b string) int { return strings.Compare(a[:3], b[:3]) })
		return out
	}
	carry, frees := r.takeEnds(map[string]bool{"s1": true})
	if got, want := names(carry), []string{"0s1a", "0s1c", "1s1e"}; !slices.Equal(got, want) {
		t.Errorf("a claim of s1 took %q, want %q", got, want)
	}
	if got, want := names(frees), []string{"0s3free"}; !slices.Equal(got, want) {
		t.Errorf("a claim of s1 took the frees %q, want %q", got, want)
	}
	carry, frees = r.takeEnds(map[string]bool{"s1": true, "s2": true})
	if got, want := names(carry), []string{"0s2b", "1s2d"}; !slices.Equal(got, want) || len(names(frees)) != 0 {
		t.Errorf("a claim of s1 and s2 took %q and the frees %q, want %q and none", got, names(frees), want)
	}
}

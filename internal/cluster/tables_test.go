package cluster_test

import (
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
)

// tables returns the Tables of the replicas given (replica → digest), the
// digests' tables listing the jobs given (digest → jobs).
func tables(of map[string]string, jobs map[string][]string) *cluster.Tables {
	t := &cluster.Tables{Of: of, ByDigest: map[string]map[string]engine.JobSpec{}}
	for d, names := range jobs {
		t.ByDigest[d] = map[string]engine.JobSpec{}
		for _, n := range names {
			t.ByDigest[d][n] = engine.JobSpec{Spec: "@hourly"}
		}
	}
	return t
}

// TestApart: a replica whose table shares no job with the tables of the
// most replicas is apart (another service under the same prefix); a deploy
// in progress (a table with one more job) is not, nor a table linked to
// the others through a third, nor a replica of an older release or
// without jobs; of two groups as large, every replica is apart.
func TestApart(t *testing.T) {
	a := map[string][]string{"x": {"report", "cleanup"}, "x2": {"report", "cleanup", "forgotten"}}
	for _, tc := range []struct {
		name string
		of   map[string]string
		jobs map[string][]string
		want []string
	}{
		{"a deploy", map[string]string{"a1": "x", "a2": "x", "a3": "x2"}, a, nil},
		{"another service", map[string]string{"a1": "x", "a2": "x", "a3": "x2", "b1": "y", "b2": "y", "old": "", "idle": cluster.EmptyTable},
			map[string][]string{"x": a["x"], "x2": a["x2"], "y": {"invoice"}}, []string{"b1", "b2"}},
		{"a tie", map[string]string{"a1": "x", "b1": "y"}, map[string][]string{"x": {"report"}, "y": {"invoice"}}, []string{"a1", "b1"}},
		{"a chain", map[string]string{"a1": "x", "b1": "y", "c1": "z"}, map[string][]string{"x": {"p"}, "y": {"p", "q"}, "z": {"q"}}, nil},
	} {
		got := slices.Sorted(maps.Keys(tables(tc.of, tc.jobs).Apart()))
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: apart %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestCheck: a name is a job when some live replica's table lists it, or
// when some live replica's table is unknown (an older release, or a table
// not read: Unread lists them); not when no replica is live, or when every
// table is known and none lists it (a replica without jobs publishes the
// empty table's digest).
func TestCheck(t *testing.T) {
	known := tables(map[string]string{"a1": "x", "idle": cluster.EmptyTable}, map[string][]string{"x": {"report"}})
	if err := known.Check("report"); err != nil {
		t.Errorf("report: %v", err)
	}
	if err := known.Check("reprot"); !errors.Is(err, cluster.ErrNoSuchJob) {
		t.Errorf("reprot: %v; want no such job", err)
	}
	if u := known.Unread(); u != nil {
		t.Errorf("unread tables %v with every table known", u)
	}
	old := tables(map[string]string{"a1": "x", "old": "", "lost": "y"}, map[string][]string{"x": {"report"}})
	if err := old.Check("reprot"); err != nil {
		t.Errorf("reprot with an older replica live: %v", err)
	}
	if u := old.Unread(); !slices.Equal(u, []string{"lost", "old"}) {
		t.Errorf("unread tables %v; want lost's and old's", u)
	}
	if err := tables(map[string]string{}, nil).Check("report"); !errors.Is(err, cluster.ErrNoSuchJob) {
		t.Errorf("report with no live replica: %v; want no such job", err)
	}
}

// TestTagged: a job is tagged while any live replica publishes it with
// the tag (a deploy adding or removing it), not after only a replica
// gone did; tags are matched whole.
func TestTagged(t *testing.T) {
	tagged := func(tags ...string) engine.JobSpec { return engine.JobSpec{Spec: "@hourly", Tags: tags} }
	tb := &cluster.Tables{Of: map[string]string{"a1": "old", "a2": "new"}, ByDigest: map[string]map[string]engine.JobSpec{
		"old":  {"report": tagged("reports"), "cleanup": tagged()},
		"new":  {"report": tagged("eu", "reports"), "cleanup": tagged("reports"), "reporting": tagged("report")},
		"gone": {"archive": tagged("reports")}, // no live replica publishes it
	}}
	for tag, want := range map[string][]string{"reports": {"cleanup", "report"}, "eu": {"report"}, "report": {"reporting"}, "repo": nil} {
		if got := tb.Tagged(tag); !slices.Equal(got, want) {
			t.Errorf("Tagged(%q) = %q, want %q", tag, got, want)
		}
	}
}

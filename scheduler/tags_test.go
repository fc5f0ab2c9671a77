package scheduler_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// TestTags: a job's tags (WithTags) are listed by Entries sorted and each
// once, over several WithTags; a bad tag, or too many, is refused at Add
// with an error naming the job and the tag, matching ErrInvalidOption.
func TestTags(t *testing.T) {
	s := newScheduler(t, locker())
	nop := func(context.Context, scheduler.RunInfo) error { return nil }
	mustAdd(t, s, "report", "@hourly", nop, scheduler.WithTags("reports", "eu"), scheduler.WithTags("team-data", "eu"))
	mustAdd(t, s, "plain", "@hourly", nop)
	es := s.Entries()
	if want := []string{"eu", "reports", "team-data"}; len(es) != 2 || es[0].Tags != nil || !slices.Equal(es[1].Tags, want) {
		t.Fatalf("Entries: %+v, want report tagged %v and plain without tags", es, want)
	}
	es[1].Tags[0] = "changed"
	if got := s.Entries()[1].Tags[0]; got != "eu" {
		t.Errorf("a change to an Entry's Tags changed the job's: %q", got)
	}

	many := make([]string, 17)
	for i := range many {
		many[i] = fmt.Sprintf("t%d", i)
	}
	for _, tc := range []struct {
		tags []string
		want string
	}{
		{[]string{""}, `tag "": empty`},
		{[]string{"ok", "two words"}, `tag "two words": contains white space`},
		{[]string{"a,b"}, `tag "a,b": contains ','`},
		{[]string{"bell\a"}, `tag "bell\a": contains the unprintable character U+0007`},
		{[]string{strings.Repeat("x", 65)}, `tag "` + strings.Repeat("x", 65) + `": longer than 64 bytes`},
		{[]string{"\xff"}, `tag "\xff": not valid UTF-8`},
		{many, "17 tags, more than 16"},
	} {
		err := s.Add("bad", "@hourly", nop, scheduler.WithTags(tc.tags...))
		if !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), `job "bad": WithTags: `+tc.want) {
			t.Errorf("Add with WithTags(%q) = %v, want ErrInvalidOption naming the job and %q", tc.tags, err, tc.want)
		}
	}
}

package scheduler

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"
)

// The bounds of a job's tags (WithTags).
const (
	maxTags   = 16 // tags of one job
	maxTagLen = 64 // bytes of one tag
)

// WithTags gives the job tags, such as a team or the kind of work, by
// which operators select jobs: redcron's replicas publish them with the
// job, and the admin API (package admin), its command (redcronctl -tag)
// and the status page pause, resume, trigger and list the jobs carrying a
// tag. A tag is at most 64 bytes of printable UTF-8, without white space
// or ','; a job has at most 16 (WithTags may be given more than once).
// Entry.Tags lists them sorted, each once. Give a job the same tags on
// every replica: tags are part of the job table the replicas compare.
func WithTags(tags ...string) JobOption {
	return func(c *jobConfig) error {
		for _, t := range tags {
			if err := checkTag(t); err != nil {
				return optionError("WithTags", "tag %q: %v", t, err)
			}
			if !slices.Contains(c.tags, t) {
				c.tags = append(c.tags, t)
			}
		}
		if len(c.tags) > maxTags {
			return optionError("WithTags", "%d tags, more than %d", len(c.tags), maxTags)
		}
		slices.Sort(c.tags)
		return nil
	}
}

// checkTag reports why t is not a valid tag.
func checkTag(t string) error {
	switch {
	case t == "":
		return fmt.Errorf("empty")
	case len(t) > maxTagLen:
		return fmt.Errorf("longer than %d bytes", maxTagLen)
	case !utf8.ValidString(t):
		return fmt.Errorf("not valid UTF-8")
	}
	for _, r := range t {
		switch {
		case unicode.IsSpace(r):
			return fmt.Errorf("contains white space")
		case r == ',':
			return fmt.Errorf("contains ','")
		case !unicode.IsPrint(r):
			return fmt.Errorf("contains the unprintable character %U", r)
		}
	}
	return nil
}

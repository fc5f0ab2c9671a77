package statuspage

import (
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Paging of the main page's lists. A fleet may run 100,000 jobs: the main
// page shows pageSize of them at a time, those whose name (or spec, or a tag)
// holds the search text, and at most maxUnpublished of the names no live
// replica publishes. Its cost per view is one filter and one sort over
// the names, and rendering and per-job reads for the rows shown alone.
const (
	pageSize       = 100 // jobs per page of the main page
	maxUnpublished = 100 // names no live replica publishes listed, of those that match
)

// pager is where the jobs shown stand among those that match the search.
type pager struct {
	Q            string // the search text, as asked
	Tag          string // Q, when it is exactly a tag some matching job carries: the page offers actions on its jobs
	Page, Pages  int    // the page shown (from 1), of Pages (at least 1)
	First, Last  int    // the jobs shown, from 1; 0 when none is
	Match, Total int    // the jobs that match the search, of all of them
	Prev, Next   string // the links to the previous and next pages; "" for none
	Fragment     string // the query of this page's live part: same page, same search
}

// query returns the query string of page of the search q.
func query(page int, q string, fragment bool) string {
	v := url.Values{}
	if q != "" {
		v.Set("q", q)
	}
	if page > 1 {
		v.Set("page", strconv.Itoa(page))
	}
	if fragment {
		v.Set("fragment", "1")
	}
	return "?" + v.Encode()
}

// matches reports whether a job's name, spec or one of its tags holds
// lower, a search text in lower case.
func matches(j *jobView, lower string) bool {
	return lower == "" || strings.Contains(strings.ToLower(j.Name), lower) || strings.Contains(strings.ToLower(j.Spec), lower) ||
		slices.ContainsFunc(j.Tags, func(t string) bool { return strings.Contains(strings.ToLower(t), lower) })
}

// filter returns the jobs of jobs (kept in their order) that match the
// search text q, case-insensitively.
func filter(jobs []jobView, q string) []jobView {
	lower := strings.ToLower(q)
	if lower == "" {
		return jobs
	}
	var out []jobView
	for i := range jobs {
		if matches(&jobs[i], lower) {
			out = append(out, jobs[i])
		}
	}
	return out
}

// paginate returns the page asked for (a number from 1; a page past the
// end is the last page, a bad one the first) of the jobs that match q, and
// where it stands. total is the number of jobs before the search.
func paginate(match []jobView, total int, q, asked string) ([]jobView, pager) {
	pg := pager{Q: q, Match: len(match), Total: total, Pages: max(1, (len(match)+pageSize-1)/pageSize)}
	for i := range match {
		if q != "" && slices.Contains(match[i].Tags, q) {
			pg.Tag = q
			break
		}
	}
	n, err := strconv.Atoi(asked)
	if err != nil || n < 1 {
		n = 1
	}
	pg.Page = min(n, pg.Pages)
	from, to := (pg.Page-1)*pageSize, min(pg.Page*pageSize, len(match))
	if from < to {
		pg.First, pg.Last = from+1, to
	}
	if pg.Page > 1 {
		pg.Prev = query(pg.Page-1, q, false)
	}
	if pg.Page < pg.Pages {
		pg.Next = query(pg.Page+1, q, false)
	}
	pg.Fragment = query(pg.Page, q, true)
	return match[from:to], pg
}

// num formats n with its thousands apart: 100,000.
func num(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/redcron/redcron/admin"
)

// acquiredLayout is RFC 3339 with milliseconds, the precision of a lock
// value's acquisition time.
const acquiredLayout = "2006-01-02T15:04:05.000Z07:00"

// classNames returns the leak classes, in the order reports list them.
func classNames() [5]string {
	return [...]string{"no_expiry", "orphaned", "minority", "over_age", "unparseable"}
}

// finding is a name with leaked copies: its copies (each node's, in
// -addrs order) and the union of their classes, in class order.
type finding struct {
	Name, Kind string
	Classes    []string
	Copies     []admin.Leak
}

// findings groups leaked copies (admin.Status.Leaks: by name, then in the
// nodes' order) by name and kind, ordered by name, kind and first key, so
// that the output does not depend on the scan's order.
func findings(copies []admin.Leak) []finding {
	var out []finding
	at := map[[2]string]int{}
	for _, l := range copies {
		id := [2]string{l.Name, l.Kind}
		if l.Kind != "lock" {
			id[0] = l.Key // a key of its own
		}
		i, ok := at[id]
		if !ok {
			i, at[id] = len(out), len(out)
			out = append(out, finding{Name: l.Name, Kind: l.Kind})
		}
		out[i].Copies = append(out[i].Copies, l)
	}
	for i := range out {
		for _, c := range classNames() {
			if slices.ContainsFunc(out[i].Copies, func(l admin.Leak) bool { return slices.Contains(l.Classes, c) }) {
				out[i].Classes = append(out[i].Classes, c)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b finding) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind),
			strings.Compare(a.Copies[0].Key, b.Copies[0].Key))
	})
	return out
}

// counts returns the number of findings in each class, every class
// present: a finding in two classes counts in both.
func counts(found []finding) map[string]int {
	out := map[string]int{}
	for _, c := range classNames() {
		out[c] = 0
	}
	for _, f := range found {
		for _, c := range f.Classes {
			out[c]++
		}
	}
	return out
}

// liveOwners returns the owners with a live heartbeat: the replicas.
func liveOwners(st *admin.Status) []string {
	out := []string{}
	for _, r := range st.Replicas {
		out = append(out, r.Instance)
	}
	return out
}

// writeTable prints the human report: a row per leak, a summary line,
// and, with -fix, what was deleted and what was left alone.
func writeTable(w io.Writer, res *result) error {
	st := res.st
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(res.found) == 0 {
		fmt.Fprintf(tw, "no leaks under prefix %q\n", st.KeyPrefix)
	} else {
		fmt.Fprintln(tw, "NAME\tKIND\tCLASSES\tNODES\tTTL\tOWNER\tAGE")
		for _, f := range res.found {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(f.Name), f.Kind, strings.Join(f.Classes, ","),
				res.hide(nodesCell(f, len(st.Nodes))), ttlCell(f), ownerCell(f), ageCell(f, res.now))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, summary(res)); err != nil {
		return err
	}
	if !res.fixRan {
		return nil
	}
	return writeFixes(w, res.fixed)
}

// summary is the one-line summary of the human report.
func summary(res *result) string {
	st := res.st
	var b strings.Builder
	fmt.Fprintf(&b, "%s scanned on %d/%s (%d failed) in %s; ", plural(st.Scanned, "key", "keys"),
		len(st.Nodes)-len(res.nodeErrors), plural(len(st.Nodes), "node", "nodes"), len(res.nodeErrors), short(st.Took))
	fmt.Fprintf(&b, "%d leaked", len(res.found))
	var parts []string
	n := counts(res.found)
	for _, c := range classNames() {
		if n[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c, n[c]))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "; live owners: %d", len(st.Replicas))
	return b.String()
}

// writeFixes prints what -fix did.
func writeFixes(w io.Writer, fixed []fixOutcome) error {
	deleted := 0
	for _, o := range fixed {
		if o.Deleted {
			deleted++
		}
	}
	if _, err := fmt.Fprintf(w, "\nfix: deleted %s, left %d alone\n", plural(deleted, "copy", "copies"), len(fixed)-deleted); err != nil {
		return err
	}
	if len(fixed) == 0 {
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, o := range fixed {
		what := "deleted"
		switch o.Reason {
		case reasonChanged:
			what = "left alone: changed or gone since the scan"
		case reasonNotString:
			what = "left alone: not a string, cannot compare-and-delete"
		case reasonError:
			what = "left alone: " + printable(o.Err)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", o.Node, printable(o.Key), what)
	}
	return tw.Flush()
}

// nodesCell is "seen/total: node,node".
func nodesCell(f finding, total int) string {
	var names []string
	for _, c := range f.Copies {
		if !slices.Contains(names, c.Node) {
			names = append(names, c.Node)
		}
	}
	return fmt.Sprintf("%d/%d: %s", len(names), total, strings.Join(names, ","))
}

// ttlCell is the copies' TTL, "min-max" when they differ; "none" is no
// expiry, "gone" a key that vanished during the scan.
func ttlCell(f finding) string {
	var ttls []time.Duration
	for _, c := range f.Copies {
		ttls = append(ttls, c.TTL)
	}
	if len(ttls) == 0 {
		return "-"
	}
	// Order: finite TTLs ascending, then none (-1); gone (-2) first.
	rank := func(d time.Duration) time.Duration {
		if d == -1 {
			return 1<<63 - 1
		}
		return d
	}
	lo := slices.MinFunc(ttls, func(a, b time.Duration) int { return cmp.Compare(rank(a), rank(b)) })
	hi := slices.MaxFunc(ttls, func(a, b time.Duration) int { return cmp.Compare(rank(a), rank(b)) })
	if ttlText(lo) == ttlText(hi) {
		return ttlText(lo)
	}
	return ttlText(lo) + "-" + ttlText(hi)
}

func ttlText(d time.Duration) string {
	switch {
	case d == -1:
		return "none"
	case d < 0:
		return "gone"
	}
	return short(d)
}

// ownerCell lists the distinct owners of the copies that hold lock
// values ("" shown as "(none)"); "-" when no copy does.
func ownerCell(f finding) string {
	var owners []string
	for _, c := range f.Copies {
		if c.Acquired.IsZero() {
			continue
		}
		o := c.Owner
		if o == "" {
			o = "(none)"
		} else {
			o = printable(o)
		}
		if !slices.Contains(owners, o) {
			owners = append(owners, o)
		}
	}
	if len(owners) == 0 {
		return "-"
	}
	return strings.Join(owners, ",")
}

// ageCell is how long ago the oldest copy was acquired, by the owner's
// clock; "-" when no copy holds a lock value.
func ageCell(f finding, now time.Time) string {
	var oldest time.Time
	for _, c := range f.Copies {
		if !c.Acquired.IsZero() && (oldest.IsZero() || c.Acquired.Before(oldest)) {
			oldest = c.Acquired
		}
	}
	if oldest.IsZero() {
		return "-"
	}
	return short(now.Sub(oldest))
}

// short formats d compactly: 412µs, 850ms, 59s, 12m5s, 3h2m, 4d3h.
func short(d time.Duration) string {
	if d < 0 {
		return "-" + short(-d)
	}
	switch {
	case d == 0:
		return "0s"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm%ds", int(d/time.Minute), int(d%time.Minute/time.Second))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}

// printable quotes s if it holds anything that could break the table or
// the terminal (tabs, newlines, escape sequences, invalid UTF-8).
func printable(s string) string {
	if strings.ContainsFunc(s, func(r rune) bool { return r == unicode.ReplacementChar || !unicode.IsPrint(r) && r != ' ' }) {
		return strconv.Quote(s)
	}
	return s
}

// The JSON document; see the package documentation and README.md. Field
// names and meanings are stable: fields may be added, never removed or
// renamed.
type (
	jsonReport struct {
		Prefix     string          `json:"prefix"`
		Nodes      int             `json:"nodes"`
		Quorum     int             `json:"quorum"`
		Scanned    int             `json:"scanned"`
		LiveOwners []string        `json:"live_owners"`
		NodeErrors []jsonNodeError `json:"node_errors"`
		Leaks      []jsonLeak      `json:"leaks"`
		Counts     map[string]int  `json:"counts"`
		Fixed      *[]jsonFix      `json:"fixed,omitempty"` // only with -fix
	}
	jsonNodeError struct {
		Node  string `json:"node"`
		Error string `json:"error"`
	}
	jsonLeak struct {
		Name    string     `json:"name"`
		Kind    string     `json:"kind"`
		Classes []string   `json:"classes"`
		Copies  []jsonCopy `json:"copies"`
	}
	jsonCopy struct {
		Node     string   `json:"node"`
		Key      string   `json:"key"`
		Type     string   `json:"type"`
		TTLms    int64    `json:"ttl_ms"`
		Owner    string   `json:"owner"`
		Acquired *string  `json:"acquired"`
		Classes  []string `json:"classes"`
	}
	jsonFix struct {
		Node    string `json:"node"`
		Key     string `json:"key"`
		Deleted bool   `json:"deleted"`
		Reason  string `json:"reason,omitempty"`
		Error   string `json:"error,omitempty"`
	}
)

// writeJSON prints the JSON document.
func writeJSON(w io.Writer, res *result) error {
	st := res.st
	doc := jsonReport{
		Prefix:     st.KeyPrefix,
		Nodes:      len(st.Nodes),
		Quorum:     st.Quorum,
		Scanned:    st.Scanned,
		LiveOwners: liveOwners(st),
		NodeErrors: []jsonNodeError{},
		Leaks:      []jsonLeak{},
		Counts:     counts(res.found),
	}
	for _, e := range res.nodeErrors {
		doc.NodeErrors = append(doc.NodeErrors, jsonNodeError{Node: e.Node, Error: e.Err})
	}
	for _, f := range res.found {
		l := jsonLeak{Name: f.Name, Kind: f.Kind, Classes: append([]string{}, f.Classes...), Copies: []jsonCopy{}}
		for _, c := range f.Copies {
			c.Node = res.hide(c.Node)
			l.Copies = append(l.Copies, copyJSON(c))
		}
		doc.Leaks = append(doc.Leaks, l)
	}
	if res.fixRan {
		fixed := []jsonFix{}
		for _, o := range res.fixed {
			fixed = append(fixed, jsonFix{Node: o.Node, Key: o.Key, Deleted: o.Deleted, Reason: o.Reason, Error: o.Err})
		}
		doc.Fixed = &fixed
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func copyJSON(c admin.Leak) jsonCopy {
	jc := jsonCopy{Node: c.Node, Key: c.Key, Type: c.Type, TTLms: c.TTL.Milliseconds(), Classes: append([]string{}, c.Classes...)}
	switch {
	case c.TTL == -1:
		jc.TTLms = -1
	case c.TTL < 0: // the key vanished between SCAN and the read
		jc.TTLms = -2
	}
	if !c.Acquired.IsZero() {
		jc.Owner = c.Owner
		at := c.Acquired.UTC().Format(acquiredLayout)
		jc.Acquired = &at
	}
	return jc
}

// plural returns n and the noun, one or many as n asks: "1 job", "2 jobs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

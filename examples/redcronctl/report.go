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

	"github.com/redcron/redcron/internal/leaks"
)

// acquiredLayout is RFC 3339 with milliseconds, the precision of a lock
// value's acquisition time.
const acquiredLayout = "2006-01-02T15:04:05.000Z07:00"

// sortedLeaks returns the report's leaks ordered by name, kind and first
// key, so that the output does not depend on the scan's map order, each
// with its copies in the order of addrs.
func sortedLeaks(rep *leaks.Report, addrs []string) []leaks.Finding {
	found := rep.Leaks()
	for i := range found {
		copies := slices.Clone(found[i].Copies)
		slices.SortStableFunc(copies, func(a, b leaks.Copy) int {
			return cmp.Compare(slices.Index(addrs, a.Node), slices.Index(addrs, b.Node))
		})
		found[i].Copies = copies
	}
	slices.SortStableFunc(found, func(a, b leaks.Finding) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Kind, b.Kind),
			strings.Compare(firstKey(a), firstKey(b)))
	})
	return found
}

func firstKey(f leaks.Finding) string {
	if len(f.Copies) == 0 {
		return ""
	}
	return f.Copies[0].Key
}

// writeTable prints the human report: a row per leak, a summary line,
// and, with -fix, what was deleted and what was left alone.
func writeTable(w io.Writer, res *result) error {
	rep := res.rep
	found := sortedLeaks(rep, res.addrs)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if len(found) == 0 {
		fmt.Fprintf(tw, "no leaks under prefix %q\n", rep.Prefix)
	} else {
		fmt.Fprintln(tw, "NAME\tKIND\tCLASSES\tNODES\tTTL\tOWNER\tAGE")
		for _, f := range found {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(f.Name), f.Kind, classNames(f.Classes, ","),
				res.hide(nodesCell(f, rep.Nodes)), ttlCell(f), ownerCell(f), ageCell(f, res.now))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if _, err := fmt.Fprintln(w, summary(res, len(found))); err != nil {
		return err
	}
	if !res.fixRan {
		return nil
	}
	return writeFixes(w, res.fixed)
}

// summary is the one-line summary of the human report.
func summary(res *result, leaked int) string {
	rep := res.rep
	var b strings.Builder
	fmt.Fprintf(&b, "%s scanned on %d/%s (%d failed) in %s; ", plural(rep.Scanned, "key", "keys"),
		rep.Nodes-len(res.nodeErrors), plural(rep.Nodes, "node", "nodes"), len(res.nodeErrors), short(rep.Took))
	fmt.Fprintf(&b, "%d leaked", leaked)
	var parts []string
	for _, c := range leaks.AllClasses() {
		if n := rep.Counts[c.String()]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", c, n))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, " "))
	}
	fmt.Fprintf(&b, "; live owners: %d", len(rep.Live))
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

func classNames(cs []leaks.Class, sep string) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.String()
	}
	return strings.Join(names, sep)
}

// nodesCell is "seen/total: node,node".
func nodesCell(f leaks.Finding, total int) string {
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
func ttlCell(f leaks.Finding) string {
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
func ownerCell(f leaks.Finding) string {
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
func ageCell(f leaks.Finding, now time.Time) string {
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
	rep := res.rep
	doc := jsonReport{
		Prefix:     rep.Prefix,
		Nodes:      rep.Nodes,
		Quorum:     rep.Quorum,
		Scanned:    rep.Scanned,
		LiveOwners: append([]string{}, rep.Live...),
		NodeErrors: []jsonNodeError{},
		Leaks:      []jsonLeak{},
		Counts:     map[string]int{},
	}
	for _, e := range res.nodeErrors {
		doc.NodeErrors = append(doc.NodeErrors, jsonNodeError{Node: e.Node, Error: e.Err})
	}
	for _, c := range leaks.AllClasses() {
		doc.Counts[c.String()] = 0
	}
	for name, n := range rep.Counts {
		doc.Counts[name] = n
	}
	for _, f := range sortedLeaks(rep, res.addrs) {
		l := jsonLeak{Name: f.Name, Kind: f.Kind, Classes: []string{}, Copies: []jsonCopy{}}
		for _, c := range f.Classes {
			l.Classes = append(l.Classes, c.String())
		}
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

func copyJSON(c leaks.Copy) jsonCopy {
	jc := jsonCopy{Node: c.Node, Key: c.Key, Type: c.Type, TTLms: c.TTL.Milliseconds(), Classes: []string{}}
	for _, k := range c.Classes {
		jc.Classes = append(jc.Classes, k.String())
	}
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

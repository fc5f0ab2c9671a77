package statuspage

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"
)

//go:embed templates
var files embed.FS

// pageData is what a template renders: the main page or a job's, whole or
// its live part alone.
type pageData struct {
	Title   string
	Base    string // the relative link to the main page
	CanAct  bool   // the request may act: show the actions
	SignIn  bool   // it may not, but a hook could let it: show the sign-in link
	Who     string
	Done    string // the action just done, for its message
	Refresh int    // ms between fetches of the live part
	// Fragment is the query of the live part, fetched at each refresh:
	// the main page's keeps its page and search.
	Fragment string
	Now      time.Time
	Main     *mainView
	Job      *jobPage
}

// parseTemplates parses the embedded templates.
func parseTemplates() (*template.Template, error) {
	t, err := template.New("page").Funcs(template.FuncMap{
		"rfc":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
		"clock": clock,
		"rel":   rel,
		"dur":   dur,
		"ms": func(d time.Duration) string {
			return fmt.Sprintf("%+dms", d.Milliseconds())
		},
		"short":   short,
		"fence":   func(f uint64) template.HTML { return short(strconv.FormatUint(f, 10)) },
		"why":     why,
		"pair":    func(a, b any) []any { return []any{a, b} },
		"num":     num,
		"segment": escapeName,
	}).ParseFS(files, "templates/*")
	if err != nil {
		return nil, fmt.Errorf("statuspage: templates: %w", err)
	}
	return t, nil
}

// shortLen is the longest replica name or fence shown whole; a longer one
// shows its first and last runes, whole on hover.
const shortLen = 15

// short returns s escaped as HTML, or, when s is longer than shortLen
// runes, its first 8 and last 6 runes around an ellipsis, with the whole
// of it in a title (shown on hover). A fence of 16 digits shows its last
// digits, which tell fences apart.
func short(s string) template.HTML {
	r := []rune(s)
	if len(r) <= shortLen {
		return template.HTML(template.HTMLEscapeString(s))
	}
	cut := string(r[:8]) + "…" + string(r[len(r)-6:])
	if strings.Trim(s, "0123456789") == "" {
		cut = "…" + string(r[len(r)-8:])
	}
	return template.HTML(`<span class="short" title="` + template.HTMLEscapeString(s) + `">` +
		template.HTMLEscapeString(cut) + `</span>`)
}

// why explains a skip reason of the scheduler's.
func why(reason string) string {
	switch reason {
	case "no_quorum":
		return "no lock attempt reached a quorum of the nodes in time"
	case "paused":
		return "the job is paused cluster-wide"
	case "overlap":
		return "the previous run of the job was still going"
	case "misfire":
		return "noticed later than the misfire grace"
	case "lease_lost":
		return "the lease was lost before the run started"
	case "max_runs":
		return "every run slot of the replica was taken (WithMaxConcurrentRuns)"
	case "cluster_limit":
		return "no permit of the job's cluster limit came free in time (WithClusterLimit)"
	case "overload":
		return "the replica's claims of the job's shard were behind (overloaded)"
	}
	return ""
}

// render writes the template name with d, or an error page if it fails.
func (p *statusPage) render(w http.ResponseWriter, status int, name string, d pageData) {
	var buf bytes.Buffer
	if err := p.tmpl.ExecuteTemplate(&buf, name, d); err != nil {
		http.Error(w, "statuspage: "+err.Error(), http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "+
		"connect-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// clock formats a time as the pages show it: its time of day, and its date
// too when it is not today; "-" for the zero time. Times are in UTC unless
// they carry a job's time zone.
func clock(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.Location() == time.Local {
		t = t.UTC()
	}
	now := time.Now().In(t.Location())
	if t.YearDay() == now.YearDay() && t.Year() == now.Year() {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04:05")
}

// rel formats how far t is from now: "3s ago", "in 2m".
func rel(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now)
	if d < 0 {
		return dur(-d) + " ago"
	}
	return "in " + dur(d)
}

// dur formats a duration short: 0.4ms, 850ms, 3.2s, 4m10s, 2h5m, 3d4h.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0ms"
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	}
	return fmt.Sprintf("%dd%dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

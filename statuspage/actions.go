package statuspage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/ledger"
	"github.com/redcron/redcron/scheduler"
)

// Bounds of the actions.
const (
	pauseTimeout   = 5 * time.Second
	triggerTimeout = 15 * time.Second // the request's life, and the wait for a replica to take it
	fixTimeout     = 10 * time.Second
)

// serveJobAction serves POST /job/{name}/pause, /resume and /trigger: for
// a request the hook lets act, on a job this replica or the nodes know.
func (p *Page) serveJobAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	if !slices.Contains([]string{"pause", "resume", "trigger"}, action) {
		p.fail(w, r, http.StatusNotFound, "No such action: "+action+".")
		return
	}
	who, ok := p.authorized(r)
	if !ok {
		p.refuse(w, r, action+" "+name)
		return
	}
	if published, paused := p.knows(r.Context(), name); !published && (action != "resume" || !paused) {
		p.fail(w, r, http.StatusNotFound, fmt.Sprintf("No job %q: neither this replica nor any live replica publishes it.", name))
		return
	}
	var (
		done  string
		err   error
		attrs = []slog.Attr{slog.String("job", name), slog.String("who", who)}
	)
	switch action {
	case "trigger":
		ctx, cancel := context.WithTimeout(r.Context(), triggerTimeout)
		defer cancel()
		var tr cluster.Triggered
		tr, err = p.cl.Trigger(ctx, name, who, triggerTimeout)
		done = ledger.ActionTriggered
		attrs = append(attrs, slog.String("replica", tr.Run.Owner), slog.Uint64("fence", tr.Run.Fence))
	default:
		ctx, cancel := context.WithTimeout(r.Context(), pauseTimeout)
		defer cancel()
		var errs []error
		errs, err = p.cl.Pause(ctx, name, who, action == "pause")
		done = map[bool]string{true: ledger.ActionPaused, false: ledger.ActionResumed}[action == "pause"]
		attrs = append(attrs, slog.Int("nodes", engine.Answered(errs)), slog.Int("of", len(p.cl.Nodes)))
	}
	p.forget()
	if err != nil {
		msg := p.hide(err.Error())
		if errors.Is(err, cluster.ErrNotTaken) {
			msg = "No replica took the trigger within " + triggerTimeout.String() + " (is a replica with the job running?); it was withdrawn."
		}
		p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: "+action+" failed", append(attrs, slog.String("error", msg))...)
		p.fail(w, r, http.StatusServiceUnavailable, fmt.Sprintf("%s %s failed: %s", action, name, msg))
		return
	}
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "status page: job "+done, attrs...)
	seeOther(w, "../"+escapeName(name)+"?done="+done)
}

// serveFix serves POST /leaks/fix: a new scan, and every leaked copy it
// finds deleted by compare-and-delete, recorded in the ledgers of the jobs
// whose locks lost a copy.
func (p *Page) serveFix(w http.ResponseWriter, r *http.Request) {
	who, ok := p.authorized(r)
	if !ok {
		p.refuse(w, r, "fix leaks")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), fixTimeout)
	defer cancel()
	rep, err := p.cl.Scanner().Scan(ctx)
	if err != nil {
		p.fail(w, r, http.StatusServiceUnavailable, "The scan failed: "+p.hide(err.Error()))
		return
	}
	deleted := 0
	for _, res := range p.cl.Fix(ctx, rep, who) {
		if res.Deleted {
			deleted++
		}
	}
	p.forget()
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "status page: leaks fixed", slog.String("who", who),
		slog.Int("leaks", len(rep.Leaks())), slog.Int("copies_deleted", deleted))
	seeOther(w, "../?done="+ledger.ActionLeaksFixed)
}

// knows reports whether this replica or a live replica publishes the job,
// and whether some node has its pause key (a pause left on a name no
// replica publishes may still be resumed).
func (p *Page) knows(ctx context.Context, name string) (published, paused bool) {
	if p.cfg.jobs != nil && slices.ContainsFunc(p.cfg.jobs(), func(e scheduler.Entry) bool { return e.Name == name }) {
		published = true
	}
	st, err := p.status(ctx)
	if err != nil {
		return published, false
	}
	i := slices.IndexFunc(st.Jobs, func(j cluster.Job) bool { return j.Name == name })
	if i < 0 {
		return published, false
	}
	return published || st.Jobs[i].Publishers > 0, st.Jobs[i].PausedOn > 0
}

// refuse answers an action the request may not take: 403, logged.
func (p *Page) refuse(w http.ResponseWriter, r *http.Request, what string) {
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: action refused: not authorized",
		slog.String("action", what), slog.String("remote", r.RemoteAddr))
	p.fail(w, r, http.StatusForbidden, "Not authorized: this page is read-only for you.")
}

// fail answers with an error page saying msg, and a link back.
func (p *Page) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	p.render(w, status, "error", pageData{Title: "redcron: " + http.StatusText(status), Base: baseOf(r), Now: time.Now(),
		Main: &mainView{Err: msg}})
}

// baseOf returns the relative link from r's URL to the main page: the page
// sees its own paths (http.StripPrefix takes its mount's off), and the
// browser resolves the link against the full URL.
func baseOf(r *http.Request) string {
	if n := strings.Count(r.URL.EscapedPath(), "/") - 1; n > 0 {
		return strings.Repeat("../", n)
	}
	return "./"
}

// seeOther redirects to a link relative to the request's URL (the page may
// be mounted under any prefix), with 303 See Other.
func seeOther(w http.ResponseWriter, link string) {
	w.Header().Set("Location", link)
	w.WriteHeader(http.StatusSeeOther)
}

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

	"github.com/redcron/redcron/admin"
	"github.com/redcron/redcron/scheduler"
)

// The actions as the ledger records them, and as the page's ?done= says
// which one was done.
const (
	actionPaused     = "paused"
	actionResumed    = "resumed"
	actionTriggered  = "triggered"
	actionLeaksFixed = "leaks_fixed"
)

// Bounds of the actions.
const (
	pauseTimeout   = 5 * time.Second
	triggerTimeout = 15 * time.Second // the request's life, and the wait for a replica to take it
	fixTimeout     = 10 * time.Second
)

// actor returns the operator a request to act (pause, resume or trigger)
// comes from, and false once it has answered a request for no such action
// (404) or one the hook does not let act on what (its refusal).
func (p *statusPage) actor(w http.ResponseWriter, r *http.Request, action, what string) (string, bool) {
	if !slices.Contains([]string{"pause", "resume", "trigger"}, action) {
		p.fail(w, r, http.StatusNotFound, "No such action: "+action+".")
		return "", false
	}
	who, ok := p.authorized(r)
	if !ok {
		p.refuse(w, r, what)
		return "", false
	}
	return who, true
}

// serveJobAction serves POST /job/{name}/pause, /resume and /trigger: for
// a request the hook lets act, on a job this replica or the nodes know.
func (p *statusPage) serveJobAction(w http.ResponseWriter, r *http.Request) {
	name, action := r.PathValue("name"), r.PathValue("action")
	who, ok := p.actor(w, r, action, action+" "+name)
	if !ok {
		return
	}
	if published, paused := p.knows(r.Context(), name); !published && (action != "resume" || !paused) {
		p.fail(w, r, http.StatusNotFound, fmt.Sprintf("No job %q: neither this replica nor any live replica publishes it.", name))
		return
	}
	c, err := p.as(who)
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, p.hide(err.Error()))
		return
	}
	var (
		done  string
		attrs = []slog.Attr{slog.String("job", name), slog.String("who", who)}
	)
	switch action {
	case "trigger":
		ctx, cancel := context.WithTimeout(r.Context(), triggerTimeout)
		defer cancel()
		var run admin.Record
		run, _, err = c.Trigger(ctx, name)
		done = actionTriggered
		attrs = append(attrs, slog.String("replica", run.Owner), slog.Uint64("fence", run.Fence))
	default:
		ctx, cancel := context.WithTimeout(r.Context(), pauseTimeout)
		defer cancel()
		act, errs := c.Pause, []error(nil)
		done = actionPaused
		if action == "resume" {
			act, done = c.Resume, actionResumed
		}
		errs, err = act(ctx, name)
		attrs = append(attrs, slog.Int("nodes", answered(errs)), slog.Int("of", len(p.nodes)))
	}
	p.forget()
	if err != nil {
		msg := p.hide(err.Error())
		if action == "trigger" && errors.Is(err, context.DeadlineExceeded) {
			msg = "No replica took the trigger within " + triggerTimeout.String() + " (is a replica with the job running?); it was withdrawn."
		}
		p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: "+action+" failed", append(attrs, slog.String("error", msg))...)
		p.fail(w, r, http.StatusServiceUnavailable, fmt.Sprintf("%s %s failed: %s", action, name, msg))
		return
	}
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "status page: job "+done, attrs...)
	seeOther(w, "../"+escapeName(name)+"?done="+done)
}

// serveTagAction serves POST /tag/{tag}/pause, /resume and /trigger: the
// action on each job the live replicas publish with the tag (admin's
// Tagged), for a request the hook lets act, one job after the other; it
// stops at the first failure and says which jobs it acted on.
func (p *statusPage) serveTagAction(w http.ResponseWriter, r *http.Request) {
	tag, action := r.PathValue("tag"), r.PathValue("action")
	who, ok := p.actor(w, r, action, action+" every job tagged "+tag)
	if !ok {
		return
	}
	c, err := p.as(who)
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, p.hide(err.Error()))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), triggerTimeout)
	defer cancel()
	jobs, err := c.Tagged(ctx, tag)
	if err != nil && len(jobs) == 0 {
		p.fail(w, r, http.StatusNotFound, p.hide(err.Error()))
		return
	}
	done := map[string]string{"pause": actionPaused, "resume": actionResumed, "trigger": actionTriggered}[action]
	for i, job := range jobs {
		switch action {
		case "trigger":
			_, _, err = c.Trigger(ctx, job)
		case "pause":
			_, err = c.Pause(ctx, job)
		default:
			_, err = c.Resume(ctx, job)
		}
		if err != nil {
			p.forget()
			msg := fmt.Sprintf("%s %s failed: %s (done before it: %s)", action, job, p.hide(err.Error()), strings.Join(jobs[:i], ", "))
			p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: "+action+" by tag failed",
				slog.String("tag", tag), slog.String("who", who), slog.String("error", msg))
			p.fail(w, r, http.StatusServiceUnavailable, msg)
			return
		}
	}
	p.forget()
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "status page: jobs "+done+" by tag",
		slog.String("tag", tag), slog.String("who", who), slog.Any("jobs", jobs))
	seeOther(w, "../../"+query(1, tag, false)+"&done="+done)
}

// serveFix serves POST /leaks/fix: a new scan, and every leaked copy it
// finds deleted by compare-and-delete, recorded in the ledgers of the jobs
// whose locks lost a copy.
func (p *statusPage) serveFix(w http.ResponseWriter, r *http.Request) {
	who, ok := p.authorized(r)
	if !ok {
		p.refuse(w, r, "fix leaks")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), fixTimeout)
	defer cancel()
	c, err := p.as(who)
	if err != nil {
		p.fail(w, r, http.StatusInternalServerError, p.hide(err.Error()))
		return
	}
	st, err := c.Status(ctx)
	if err != nil {
		p.fail(w, r, http.StatusServiceUnavailable, "The scan failed: "+p.hide(err.Error()))
		return
	}
	fixed, _ := c.FixLeaks(ctx, st.Leaks) // a copy left alone stays a leak the page shows
	deleted, names := 0, map[[2]string]bool{}
	for _, l := range fixed {
		if l.Deleted {
			deleted++
		}
		names[[2]string{l.Name, l.Kind}] = true
	}
	p.forget()
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelInfo, "status page: leaks fixed", slog.String("who", who),
		slog.Int("leaks", len(names)), slog.Int("copies_deleted", deleted))
	seeOther(w, "../?done="+actionLeaksFixed)
}

// answered returns how many nodes went through: errs (one per node) nil.
func answered(errs []error) int {
	n := 0
	for _, err := range errs {
		if err == nil {
			n++
		}
	}
	return n
}

// knows reports whether this replica or a live replica publishes the job,
// and whether some node has its pause key (a pause left on a name no
// replica publishes may still be resumed).
func (p *statusPage) knows(ctx context.Context, name string) (published, paused bool) {
	if p.cfg.jobs != nil && slices.ContainsFunc(p.cfg.jobs(), func(e scheduler.Entry) bool { return e.Name == name }) {
		published = true
	}
	st, err := p.status(ctx)
	if err != nil {
		return published, false
	}
	i := slices.IndexFunc(st.Jobs, func(j admin.Job) bool { return j.Name == name })
	if i < 0 {
		return published, false
	}
	return published || st.Jobs[i].Publishers > 0, st.Jobs[i].PausedOn > 0
}

// refuse answers an action the request may not take: 403, logged.
func (p *statusPage) refuse(w http.ResponseWriter, r *http.Request, what string) {
	p.cfg.logger.LogAttrs(r.Context(), slog.LevelWarn, "status page: action refused: not authorized",
		slog.String("action", what), slog.String("remote", r.RemoteAddr))
	p.fail(w, r, http.StatusForbidden, "Not authorized: this page is read-only for you.")
}

// fail answers with an error page saying msg, and a link back.
func (p *statusPage) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
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

package statuspage

import (
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode"
)

// jobPage is what a job's page shows.
type jobPage struct {
	Job       jobView
	Link      string // the relative link from the job's page to itself, for its forms
	History   []runView
	Skips     []skipView // its ticks the replicas report skipped
	Err       string     // the history was read from fewer than a majority of the nodes
	Known     bool       // this replica or the nodes know the job
	Published bool       // this replica or a live replica publishes it: a job of the fleet's
}

// serveMain serves the main page, or with ?fragment its live part.
func (p *statusPage) serveMain(w http.ResponseWriter, r *http.Request) {
	st, err := p.status(r.Context())
	v := p.mainOf(st, err)
	v.Skips = v.Skips[:min(len(v.Skips), maxSkips)]
	q := r.URL.Query()
	search := strings.TrimSpace(q.Get("q"))
	v.Shown, v.Pager = paginate(filter(v.Jobs, search), len(v.Jobs), search, q.Get("page"))
	all := len(v.Jobs) + len(v.Unpublished)
	v.Unpublished = filter(v.Unpublished, search)
	if n := len(v.Unpublished); n > maxUnpublished {
		v.Unpublished, v.More = v.Unpublished[:maxUnpublished], n-maxUnpublished
	}
	p.withRuns(r.Context(), st, &v, all, v.Shown, v.Unpublished)
	d := p.data(r, "redcron", baseOf(r))
	d.Fragment = v.Pager.Fragment
	d.Main = &v
	p.render(w, http.StatusOK, p.template(r, "main"), d)
}

// serveLogin serves GET /login, the sign-in link of a page with an
// authorization hook: a request the hook accepts goes to the main page;
// another is challenged for basic-auth credentials (a browser sends them
// only once challenged, and then with every request to the page). A
// service whose hook reads something else mounts its own sign-in there.
func (p *statusPage) serveLogin(w http.ResponseWriter, r *http.Request) {
	if _, ok := p.authorized(r); ok || p.cfg.authorize == nil {
		seeOther(w, "./")
		return
	}
	w.Header().Set("WWW-Authenticate", `Basic realm="redcron", charset="UTF-8"`)
	p.fail(w, r, http.StatusUnauthorized, "Not signed in: give the credentials your service's status page asks for.")
}

// serveJob serves a job's page, or with ?fragment its live part: its row
// and its history, runs, missed ticks and operators' actions. A job
// neither this replica nor the nodes know is not found (404).
func (p *statusPage) serveJob(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	st, err := p.status(r.Context())
	v := p.mainOf(st, err)
	jp := &jobPage{Link: escapeName(name), Job: jobView{Name: name}}
	if i := slices.IndexFunc(v.Jobs, func(j jobView) bool { return j.Name == name }); i >= 0 {
		jp.Job, jp.Known, jp.Published = v.Jobs[i], true, true
	} else if i := slices.IndexFunc(v.Unpublished, func(j jobView) bool { return j.Name == name }); i >= 0 {
		jp.Job, jp.Known = v.Unpublished[i], true
	}
	for _, sk := range v.Skips {
		if sk.Job == name {
			jp.Skips = append(jp.Skips, sk)
		}
	}
	row := []jobView{jp.Job}
	if !jp.Known { // no read for a name nobody knows
		row = nil
	}
	p.withRuns(r.Context(), st, &v, len(v.Jobs)+len(v.Unpublished), row)
	if jp.Known {
		jp.Job = row[0]
	}
	d := p.data(r, name+" · redcron", baseOf(r))
	d.Job, d.Main = jp, &v
	if !jp.Known {
		p.render(w, http.StatusNotFound, p.template(r, "job"), d)
		return
	}
	runs, herr := p.history(r.Context(), name)
	if herr != nil {
		jp.Err = p.hide(herr.Error())
	}
	for _, run := range runs {
		jp.History = append(jp.History, runOf(name, run, p.hide))
	}
	p.render(w, http.StatusOK, p.template(r, "job"), d)
}

// template returns the name of the page's template, or of its live part
// for a request with ?fragment.
func (p *statusPage) template(r *http.Request, page string) string {
	if r.URL.Query().Has("fragment") {
		return page + "-live"
	}
	return page
}

// data returns the page's frame for r.
func (p *statusPage) data(r *http.Request, title, base string) pageData {
	who, ok := p.authorized(r)
	done := r.URL.Query().Get("done")
	switch done {
	case actionPaused, actionResumed, actionTriggered, actionLeaksFixed:
	default:
		done = ""
	}
	return pageData{Title: title, Base: base, CanAct: ok, SignIn: !ok && p.cfg.authorize != nil, Who: who, Done: done,
		Refresh: refreshMS, Fragment: "?fragment=1", Now: time.Now()}
}

// authorized returns who asks, and whether they may act.
func (p *statusPage) authorized(r *http.Request) (string, bool) {
	if p.cfg.authorize == nil {
		return "", false
	}
	who, ok := p.cfg.authorize(r)
	if !ok {
		return "", false
	}
	// The operator's name goes in keys' values separated by "|".
	who = strings.Map(func(c rune) rune {
		if c == '|' || !unicode.IsPrint(c) {
			return '_'
		}
		return c
	}, who)
	if who == "" {
		who = "operator"
	}
	if r := []rune(who); len(r) > 64 {
		who = string(r[:64])
	}
	return who, true
}

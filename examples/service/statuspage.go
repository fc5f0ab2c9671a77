package main

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/statuspage"
)

// mountStatusPage mounts the replica's status page at /redcron/. With a
// token, a request whose basic-auth password is the token may act (pause,
// resume, trigger, fix leaks), as the operator its user names; without,
// the page is read-only. /redcron/login asks a browser for the token (a
// browser sends basic auth only once challenged), then goes to the page.
func mountStatusPage(mux *http.ServeMux, s *redcron.Scheduler, token string) error {
	want := sha256.Sum256([]byte(token))
	valid := func(password string) bool { // compared as digests: no timing tells the token's length
		got := sha256.Sum256([]byte(password))
		return subtle.ConstantTimeCompare(got[:], want[:]) == 1
	}
	var opts []statuspage.Option
	if token != "" {
		opts = append(opts, statuspage.WithAuthorize(func(r *http.Request) (string, bool) {
			user, password, ok := r.BasicAuth()
			return user, ok && valid(password)
		}))
	}
	page, err := s.StatusPage(opts...)
	if err != nil {
		return err
	}
	mux.Handle("/redcron/", http.StripPrefix("/redcron", page))
	mux.HandleFunc("GET /redcron/login", func(w http.ResponseWriter, r *http.Request) {
		if _, password, ok := r.BasicAuth(); token == "" || ok && valid(password) {
			w.Header().Set("Location", "./")
			w.WriteHeader(http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="redcron", charset="UTF-8"`)
		http.Error(w, "the admin token is the password; the user names you in the logs and the ledger", http.StatusUnauthorized)
	})
	return nil
}

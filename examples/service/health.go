package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/redcron/redcron"
	"github.com/redcron/redcron/store"
)

// health answers /healthz: 200 while a majority of the nodes is up (as far
// as the last lock operations tell), 503 otherwise, with the jobs' state.
func health(s *redcron.Scheduler, nodes []*store.Node) http.Handler {
	type job struct {
		Name       string    `json:"name"`
		Next       time.Time `json:"next"`
		Prev       time.Time `json:"prev,omitzero"`
		Running    bool      `json:"running"`
		LastResult string    `json:"last_result,omitempty"`
		LastSkip   string    `json:"last_skip,omitempty"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		up := map[string]bool{}
		n := 0
		for _, node := range nodes {
			up[node.Name()] = node.Up()
			if node.Up() {
				n++
			}
		}
		var jobs []job
		for _, e := range s.Entries() {
			j := job{Name: e.Name, Next: e.Next, Prev: e.Prev, Running: e.Running}
			if e.LastResult != 0 {
				j.LastResult = e.LastResult.String()
			}
			if e.LastSkip != 0 {
				j.LastSkip = e.LastSkip.String()
			}
			jobs = append(jobs, j)
		}
		w.Header().Set("Content-Type", "application/json")
		if n < len(nodes)/2+1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": up, "jobs": jobs})
	})
}

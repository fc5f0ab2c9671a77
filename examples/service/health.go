package main

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/redcron/redcron"
)

// health answers /healthz: 200 while a majority of the nodes is up (as far
// as the last lock operations tell), 503 otherwise, with the nodes' and the
// jobs' state.
func health(s *redcron.Scheduler) http.Handler {
	type job struct {
		Name       string    `json:"name"`
		Next       time.Time `json:"next"`
		Prev       time.Time `json:"prev,omitzero"`
		Running    bool      `json:"running"`
		LastResult string    `json:"last_result,omitempty"`
		LastSkip   string    `json:"last_skip,omitempty"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		states := s.Locks().NodeStates()
		n := 0
		for _, st := range states {
			if st == "up" {
				n++
			}
		}
		var jobs []job
		for _, e := range s.Entries() {
			jobs = append(jobs, job{Name: e.Name, Next: e.Next, Prev: e.Prev, Running: e.Running,
				LastResult: e.LastResult, LastSkip: e.LastSkip})
		}
		w.Header().Set("Content-Type", "application/json")
		if n < len(states)/2+1 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": states, "jobs": jobs})
	})
}

package statuspage_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/statuspage"
	"github.com/redcron/redcron/store"
)

// A status page mounted at /redcron/ next to /metrics, read-only except
// for the requests with the admin token as their basic-auth password. A
// replica made with redcron.New gets it from its Scheduler's StatusPage,
// which also gives it the replica's jobs (statuspage.WithJobs).
func ExampleNew() {
	var nodes []*store.Node
	for _, addr := range []string{"redis-a:6379", "redis-b:6379", "redis-c:6379"} {
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}))
		if err != nil {
			log.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes)
	if err != nil {
		log.Fatal(err)
	}
	token := os.Getenv("ADMIN_TOKEN")
	page, err := statuspage.New(locks, statuspage.WithAuthorize(func(r *http.Request) (string, bool) {
		user, password, ok := r.BasicAuth()
		return user, ok && token != "" && password == token // use crypto/subtle in earnest
	}))
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/redcron/", http.StripPrefix("/redcron", page))

	// A request that may not act is refused before any node is asked.
	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("POST", "/redcron/job/nightly/pause", nil))
	fmt.Println(w.Code)
	// Output: 403
}

package statuspage

import (
	"fmt"
	"log/slog"
	"net/http"

	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/scheduler"
)

// invalidOption is the error of New for a bad option or argument, which it
// names; it matches mutex.ErrInvalidOption.
type invalidOption struct{ err error }

func (e *invalidOption) Error() string   { return "statuspage: " + e.err.Error() }
func (e *invalidOption) Unwrap() []error { return []error{mutex.ErrInvalidOption, e.err} }

// invalid returns New's error for a bad option or argument, formatted as
// fmt.Errorf formats.
func invalid(format string, args ...any) error {
	return &invalidOption{fmt.Errorf(format, args...)}
}

// Option configures New.
type Option func(*config) error

type config struct {
	authorize func(*http.Request) (string, bool) // nil: read-only
	logger    *slog.Logger
	jobs      func() []scheduler.Entry // nil: jobs as the nodes know them
}

// WithAuthorize lets the requests that f accepts act: pause, resume and
// trigger jobs, fix leaks. f returns who is asking (it names the operator
// in the logs and the ledger) and whether they may act; it is called for
// every page view too, to show the actions, or to a request it refuses a
// sign-in link to the page's /login, which challenges a browser for
// basic-auth credentials (a browser sends them only once challenged):
// mount your own handler at that path for another sign-in. Without it the
// page is read-only and every action is refused (403).
func WithAuthorize(f func(r *http.Request) (who string, ok bool)) Option {
	return func(c *config) error {
		if f == nil {
			return invalid("WithAuthorize: nil function")
		}
		c.authorize = f
		return nil
	}
}

// WithLogger logs the actions (who, what, on how many nodes), refused
// requests and failed reads through l. The default is silent.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) error {
		if l == nil {
			return invalid("WithLogger: nil logger")
		}
		c.logger = l
		return nil
	}
}

// WithJobs gives the page this replica's jobs (a scheduler's Entries), for
// their specs, time zones and next ticks; jobs that only the nodes know
// are listed too. Without it, the page lists the jobs the nodes know,
// without their schedules. redcron.Scheduler.StatusPage sets it.
func WithJobs(entries func() []scheduler.Entry) Option {
	return func(c *config) error {
		if entries == nil {
			return invalid("WithJobs: nil function")
		}
		c.jobs = entries
		return nil
	}
}

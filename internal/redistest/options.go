package redistest

import "strconv"

// An Option configures the servers started by Start.
type Option func(*config)

type config struct {
	proxy      bool
	appendOnly bool
	args       []string
}

// WithProxy puts an in-process TCP proxy in front of every server: Addr then
// returns the proxy's address and the server's SetLatency, Cut and Heal act
// on it.
func WithProxy() Option {
	return func(c *config) { c.proxy = true }
}

// WithAppendOnly turns on AOF persistence with appendfsync always, so that
// data acknowledged before Kill survives Restart.
func WithAppendOnly() Option {
	return func(c *config) { c.appendOnly = true }
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory", "10mb").
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// redisArgs returns the redis-server arguments for a server listening on
// port with its working directory dir.
func (c *config) redisArgs(port int, dir string) []string {
	args := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--save", "",
		"--logfile", "",
	}
	if c.appendOnly {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	return append(args, c.args...)
}

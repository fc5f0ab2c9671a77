package redistest

import "github.com/redcron/redcron/internal/redisproc"

// An Option configures the servers started by Start.
type Option func(*config)

type config struct {
	proxy      bool
	appendOnly bool
	tlsPort    bool
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

// WithTLSPort gives every server a second free port for TLS, which
// Server.TLSAddr returns. The certificate options go in WithArgs, for
// example WithArgs("--tls-cert-file", cert, "--tls-key-file", key,
// "--tls-ca-cert-file", ca).
func WithTLSPort() Option {
	return func(c *config) { c.tlsPort = true }
}

// WithArgs appends extra redis-server command-line arguments, for example
// WithArgs("--maxmemory", "10mb").
func WithArgs(args ...string) Option {
	return func(c *config) { c.args = append(c.args, args...) }
}

// procConfig returns the configuration of a server run from bin in dir.
func (c *config) procConfig(bin, dir string) redisproc.Config {
	return redisproc.Config{Bin: bin, Dir: dir, AppendOnly: c.appendOnly, TLSPort: c.tlsPort, Args: c.args}
}

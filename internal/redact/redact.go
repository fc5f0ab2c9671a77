// Package redact takes secrets out of the texts redcron shows or logs:
// the errors of runs and of nodes, and addresses, on the admin command's
// tables and JSON, the status page and the logs of their actions. Every
// such text passes through one function, Redactor.Redact.
package redact

import (
	"cmp"
	"context"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"
)

// Mask replaces each secret taken out of a text.
const Mask = "[redacted]"

// How long the credentials providers are given to answer, and how many of
// the values they returned are kept (the newest), so that a rotated
// password stays hidden in older texts (a run's error in the ledger).
const (
	askTimeout = 2 * time.Second
	keepAsked  = 32
)

var (
	// userinfo matches the password of a URL's user info,
	// "scheme://user:password@" or "scheme://:password@", up to the last
	// "@" before the host's path, so that a password holding "@" goes
	// whole.
	userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^\s/]*@`)
	// queryPassword matches a URL's password=... or sentinel_password=...
	// query parameter.
	queryPassword = regexp.MustCompile(`(?i)([?&](?:sentinel_)?password=)[^&#\s]*`)
)

// Redactor takes secrets out of texts: the passwords of the nodes'
// clients (their options', and what their credentials providers return),
// the passwords of the nodes' names that are URLs, the secrets given to
// New (a Sentinel's password, which a failover client does not expose),
// and the password of any URL in the text (redis://user:password@host,
// rediss://:password@host, ?password=). It is safe for concurrent use.
type Redactor struct {
	static []string                         // never changes
	ask    []func(context.Context) []string // the credentials providers

	mu   sync.Mutex
	seen []string // what they returned, the newest last
}

// New returns a Redactor of the nodes' secrets and of the secrets given.
// It does no I/O: the credentials providers are asked by Redact, each
// time, so that a rotated password is hidden too.
func New(nodes []*engine.Node, secrets ...string) *Redactor {
	r := &Redactor{static: slices.Clone(secrets)}
	for _, n := range nodes {
		if u, err := url.Parse(n.Name()); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				r.static = append(r.static, pw)
			}
		}
		var (
			password string
			plain    func() (string, string)
			withCtx  func(context.Context) (string, string, error)
			stream   auth.StreamingCredentialsProvider
		)
		switch c := n.Client().(type) {
		case *redis.Client:
			o := c.Options()
			password, plain, withCtx, stream = o.Password, o.CredentialsProvider, o.CredentialsProviderContext, o.StreamingCredentialsProvider
		case *redis.ClusterClient:
			o := c.Options()
			password, plain, withCtx, stream = o.Password, o.CredentialsProvider, o.CredentialsProviderContext, o.StreamingCredentialsProvider
		case *redis.Ring:
			o := c.Options()
			password, plain, withCtx, stream = o.Password, o.CredentialsProvider, o.CredentialsProviderContext, o.StreamingCredentialsProvider
		}
		r.static = append(r.static, password)
		r.ask = append(r.ask, providers(plain, withCtx, stream)...)
	}
	return r
}

// providers returns a function per credentials provider set, that returns
// the secrets it gives now.
func providers(plain func() (string, string), withCtx func(context.Context) (string, string, error),
	stream auth.StreamingCredentialsProvider) []func(context.Context) []string {
	var out []func(context.Context) []string
	if plain != nil {
		out = append(out, func(context.Context) []string { _, pw := plain(); return []string{pw} })
	}
	if withCtx != nil {
		out = append(out, func(ctx context.Context) []string {
			if _, pw, err := withCtx(ctx); err == nil {
				return []string{pw}
			}
			return nil
		})
	}
	if stream != nil {
		out = append(out, func(context.Context) []string {
			creds, unsubscribe, err := stream.Subscribe(listener{})
			if err != nil || creds == nil {
				return nil
			}
			if unsubscribe != nil {
				_ = unsubscribe()
			}
			_, pw := creds.BasicAuth()
			return []string{pw, creds.RawCredentials()}
		})
	}
	return out
}

// listener is the redactor's subscription to a streaming credentials
// provider, taken back at once: it needs only the current credentials.
type listener struct{}

func (listener) OnNext(auth.Credentials) {}
func (listener) OnError(error)           {}

// Redact returns s with every secret it knows replaced by Mask, and the
// password of every URL in it.
func (r *Redactor) Redact(s string) string {
	if s == "" {
		return s
	}
	s = userinfo.ReplaceAllString(s, "${1}"+Mask+"@")
	s = queryPassword.ReplaceAllString(s, "${1}"+Mask)
	secrets := append(slices.Clone(r.static), r.provided()...)
	// The longest first, so that a secret holding another goes whole.
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	for _, secret := range secrets {
		if secret != "" {
			s = strings.ReplaceAll(s, secret, Mask)
		}
	}
	return s
}

// provided asks the credentials providers and returns what they have
// returned, this time and before: the newest keepAsked values.
func (r *Redactor) provided() []string {
	if len(r.ask) == 0 {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), askTimeout)
	defer cancel()
	for _, ask := range r.ask {
		for _, v := range ask(ctx) {
			if v != "" && !slices.Contains(r.seen, v) {
				r.seen = append(r.seen, v)
			}
		}
	}
	if len(r.seen) > keepAsked {
		r.seen = slices.Delete(r.seen, 0, len(r.seen)-keepAsked)
	}
	return slices.Clone(r.seen)
}

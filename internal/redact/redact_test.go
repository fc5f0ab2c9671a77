package redact_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redact"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"
)

// node returns a node named name over c, closed when the test ends.
func node(t *testing.T, name string, c redis.UniversalClient) *engine.Node {
	t.Helper()
	t.Cleanup(func() { _ = c.Close() })
	n, err := engine.NewNode(name, c)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// check fails the test unless r turns each text into its want.
func check(t *testing.T, r *redact.Redactor, cases map[string]string) {
	t.Helper()
	for in, want := range cases {
		if got := r.Redact(in); got != want {
			t.Errorf("Redact(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}

// TestRedactOptions: the passwords of a client's, a cluster client's and a
// ring's options, and of a node's name that is a URL, are taken out.
func TestRedactOptions(t *testing.T) {
	r := redact.New([]*engine.Node{
		node(t, "redis://ops:pw-in-name@10.0.0.1:6379/0", redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379", Password: "pw-client"})),
		node(t, "10.0.0.2:6379", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.2:6379"}, Password: "pw-cluster"})),
		node(t, "ring", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "10.0.0.3:6379"}, Password: "pw-ring"})),
	})
	check(t, r, map[string]string{
		"auth pw-client, pw-cluster, pw-ring and pw-in-name refused": "auth [redacted], [redacted], [redacted] and [redacted] refused",
		"nothing secret here": "nothing secret here",
		"":                    "",
	})
}

// TestRedactURLs: the password of any URL in a text is taken out, its
// user and host kept: user:pass@, :pass@, a password holding "@", and a
// password query parameter.
func TestRedactURLs(t *testing.T) {
	check(t, redact.New(nil), map[string]string{
		"dial redis://user:pass@host:6379/0 failed":         "dial redis://user:[redacted]@host:6379/0 failed",
		"rediss://:pass@host:6380 refused":                  "rediss://:[redacted]@host:6380 refused",
		"redis://u:p@ss@h:1/2 and unix://u:x@/tmp/r.sock":   "redis://u:[redacted]@h:1/2 and unix://u:[redacted]@/tmp/r.sock",
		"redis://h:1/0?db=1&password=hunter2&x=1":           "redis://h:1/0?db=1&password=[redacted]&x=1",
		"redis://s:26379?sentinel_password=hunter2":         "redis://s:26379?sentinel_password=[redacted]",
		"redis://user@host:6379 and http://example.com/a:b": "redis://user@host:6379 and http://example.com/a:b",
	})
}

// TestRedactSentinel: a failover client's master password is taken out
// from its options; the Sentinels' own password, which the client does not
// expose, when given to New, and in a failover URL.
func TestRedactSentinel(t *testing.T) {
	opt := &redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.9:26379"},
		SentinelPassword: "pw-sentinel", Password: "pw-master"}
	r := redact.New([]*engine.Node{
		node(t, "sentinel", redis.NewFailoverClient(opt)),
		node(t, "sentinel-cluster", redis.NewFailoverClusterClient(opt)),
	}, opt.SentinelPassword)
	check(t, r, map[string]string{
		"sentinel pw-sentinel, master pw-master":         "sentinel [redacted], master [redacted]",
		"redis://:other-pw@10.0.0.9:26379?master_name=m": "redis://:[redacted]@10.0.0.9:26379?master_name=m",
	})
}

// stream is a streaming credentials provider whose credentials rotate at
// each subscription; it counts the subscriptions left open.
type stream struct {
	n    atomic.Int32
	open atomic.Int32
}

func (s *stream) Subscribe(auth.CredentialsListener) (auth.Credentials, auth.UnsubscribeFunc, error) {
	n := s.n.Add(1)
	s.open.Add(1)
	return auth.NewBasicCredentials("svc", "pw-stream-"+string(rune('0'+n))), func() error { s.open.Add(-1); return nil }, nil
}

// TestRedactProviders: what the credentials providers return is taken
// out, each kind (plain, with a context, streaming), also after it rotated:
// the old value too, as older texts may hold it. A streaming provider's
// subscription is taken back.
func TestRedactProviders(t *testing.T) {
	var plain, withCtx atomic.Int32
	st := &stream{}
	r := redact.New([]*engine.Node{
		node(t, "a", redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379", CredentialsProvider: func() (string, string) {
			return "svc", "pw-plain-" + string(rune('0'+plain.Add(1)))
		}})),
		node(t, "b", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.2:6379"},
			CredentialsProviderContext: func(context.Context) (string, string, error) {
				return "svc", "pw-ctx-" + string(rune('0'+withCtx.Add(1))), nil
			}})),
		node(t, "c", redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "10.0.0.3:6379"}, StreamingCredentialsProvider: st})),
	})
	text := "raw svc:pw-stream-1"
	for i := range 3 {
		// The i+1th call: each provider returns its i+1th value now.
		n := string(rune('1' + i))
		text += ", now pw-plain-" + n + " pw-ctx-" + n + " pw-stream-" + n
		if got := r.Redact(text); strings.Contains(got, "pw-") || strings.Contains(got, "svc:") {
			t.Errorf("Redact(%q) = %q", text, got)
		}
	}
	if st.open.Load() != 0 {
		t.Errorf("%d subscriptions to the streaming provider left open", st.open.Load())
	}
}

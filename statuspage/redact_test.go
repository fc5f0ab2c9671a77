package statuspage

import (
	"testing"

	"github.com/redcron/redcron/internal/cluster"
	"github.com/redcron/redcron/internal/engine"
	"github.com/redis/go-redis/v9"
)

// TestRedact: the clients' passwords and any URL's password are taken out
// of a text; a node's name shows as host:port.
func TestRedact(t *testing.T) {
	a, _ := engine.NewNode("redis://ops:pw-in-name@10.0.0.1:6379/0", redis.NewClient(&redis.Options{Addr: "10.0.0.1:6379", Password: "pw-client"}))
	b, _ := engine.NewNode("10.0.0.2:6379", redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"10.0.0.2:6379"}, Password: "pw-cluster"}))
	hide := redactor([]*engine.Node{a, b})
	got := hide("dial redis://u:pw-other@h:1 failed; auth pw-client, pw-cluster and pw-in-name refused")
	want := "dial redis://u:[redacted]@h:1 failed; auth [redacted], [redacted] and [redacted] refused"
	if got != want {
		t.Errorf("hide = %q\nwant %q", got, want)
	}
	for name, want := range map[string]string{
		"redis://ops:pw@10.0.0.1:6379/0": "10.0.0.1:6379", "ops:pw@10.0.0.1:6379": "10.0.0.1:6379", "10.0.0.3:6379": "10.0.0.3:6379",
	} {
		if got := cluster.NodeName(name); got != want {
			t.Errorf("NodeName(%q) = %q, want %q", name, got, want)
		}
	}
}

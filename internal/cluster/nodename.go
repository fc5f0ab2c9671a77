package cluster

import (
	"net/url"
	"strings"
)

// NodeName returns a node's name as pages and records show it: a URL (a
// name such as redis://user:password@host:6379/0) shows its host:port
// alone, and a name with user info its part after the "@", so that no
// credential is shown or stored.
func NodeName(name string) string {
	if u, err := url.Parse(name); err == nil && u.Scheme != "" && u.Host != "" {
		return u.Host
	}
	if i := strings.LastIndex(name, "@"); i >= 0 {
		return name[i+1:]
	}
	return name
}

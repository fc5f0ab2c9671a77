package statuspage

import (
	"net/url"
	"regexp"
	"strings"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redis/go-redis/v9"
)

// userinfo matches the password of a URL's user info: "://user:password@".
var userinfo = regexp.MustCompile(`(://[^:/@\s]*:)[^@\s]*@`)

// redactor returns a function that takes the nodes' secrets out of a text:
// the passwords of their clients' options, and any URL's password.
func redactor(nodes []*engine.Node) func(string) string {
	var secrets []string
	for _, n := range nodes {
		switch c := n.Client().(type) {
		case *redis.Client:
			secrets = append(secrets, c.Options().Password)
		case *redis.ClusterClient:
			secrets = append(secrets, c.Options().Password)
		case *redis.Ring:
			secrets = append(secrets, c.Options().Password)
		}
		if u, err := url.Parse(n.Name()); err == nil && u.User != nil {
			if pw, ok := u.User.Password(); ok {
				secrets = append(secrets, pw)
			}
		}
	}
	return func(s string) string {
		s = userinfo.ReplaceAllString(s, "${1}[redacted]@")
		for _, secret := range secrets {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "[redacted]")
			}
		}
		return s
	}
}

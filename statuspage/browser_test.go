package statuspage_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/browsertest"
)

// textOf returns the text of the first element sel finds in tab's page,
// its white space folded.
func textOf(tab context.Context, sel string) string {
	return strings.Join(strings.Fields(browsertest.Text(tab, sel)), " ")
}

// waitHeadline waits until the headline of tab's page is in state, and
// says each of wants (the page refreshes itself), and returns its text.
func waitHeadline(t *testing.T, tab context.Context, state string, d time.Duration, wants ...string) string {
	t.Helper()
	var text string
	waitUntil(t, d, "a headline "+state, func() bool {
		h := browsertest.Eval(tab, `(h => h ? h.className + "\n" + h.textContent : "")(document.getElementById("headline"))`)
		class, rest, _ := strings.Cut(h, "\n")
		text = strings.Join(strings.Fields(rest), " ")
		if class != "headline "+state {
			return false
		}
		for _, w := range wants {
			if !strings.Contains(text, w) {
				return false
			}
		}
		return true
	})
	return text
}

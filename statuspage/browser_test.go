package statuspage_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// newBrowser starts headless Chromium (Debian's chromium, which
// scripts/test installs) with a fresh profile, kept off the network, and
// returns its context; it is closed when the test ends.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not on PATH (scripts/test installs Debian's chromium package): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
	}
	for _, flag := range []string{"no-sandbox", "disable-gpu", "disable-quic", "disable-background-networking",
		"disable-component-update", "disable-sync", "disable-dev-shm-usage", "disable-extensions", "disable-default-apps"} {
		opts = append(opts, chromedp.Flag(flag, true))
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return browser
}

// newTab opens a tab of browser in a context of its own, 1280 px wide,
// sending user's basic-auth credentials (with the token) with every
// request; none for "".
func newTab(t *testing.T, browser context.Context, user string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank"), chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	if user != "" {
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+token))
		headers := network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}}
		if _, err := chromedp.Call(tab, network.SetExtraHTTPHeaders, headers); err != nil {
			t.Fatal(err)
		}
	}
	return tab
}

// visit navigates tab to url.
func visit(t *testing.T, tab context.Context, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate to %s: %v", url, err)
	}
}

// click clicks the element sel finds, as a user would.
func click(t *testing.T, tab context.Context, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// eval evaluates a JavaScript expression in tab's page and returns its
// value as a string ("" if it fails: the page may be loading).
func eval(tab context.Context, js string) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return ""
	}
	return v
}

// textOf returns the text of the first element sel finds in tab's page,
// its white space folded.
func textOf(tab context.Context, sel string) string {
	q, _ := json.Marshal(sel)
	return strings.Join(strings.Fields(eval(tab, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, q))), " ")
}

// waitHeadline waits until the headline of tab's page is in state, and
// says each of wants (the page refreshes itself), and returns its text.
func waitHeadline(t *testing.T, tab context.Context, state string, d time.Duration, wants ...string) string {
	t.Helper()
	var text string
	waitUntil(t, d, "a headline "+state, func() bool {
		h := eval(tab, `(h => h ? h.className + "\n" + h.textContent : "")(document.getElementById("headline"))`)
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

// screenshot saves a full-page PNG of tab's page under $REDCRON_SCREENSHOTS
// (a directory) or the test's temporary directory, and logs where.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("REDCRON_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}

// Package browsertest drives headless Chromium for the tests of the status
// page: a browser with a fresh profile, tabs with credentials of their
// own, and the steps a user takes (visit, click, read, screenshot). Only
// tests import it.
package browsertest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// New starts headless Chromium (Debian's chromium, which scripts/test
// installs) with a fresh profile, and returns its context; it is closed
// when the test ends. The flags keep it off the network: Chromium would
// otherwise wait on its own connections.
func New(t testing.TB) context.Context {
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

// Tab opens a tab of browser, 1280 px wide, in a context of its own (no
// shared credentials), sending headers with every request (Basic's, as a
// browser sends them once given).
func Tab(t testing.TB, browser context.Context, headers map[string]string) context.Context {
	t.Helper()
	tab, cancel := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	t.Cleanup(cancel)
	if err := chromedp.Do(tab, chromedp.Navigate("about:blank"), chromedp.EmulateViewport(1280, 900)); err != nil {
		t.Fatal(err)
	}
	if len(headers) > 0 {
		h := network.Headers{}
		for k, v := range headers {
			h[k] = v
		}
		if _, err := chromedp.Call(tab, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: h}); err != nil {
			t.Fatal(err)
		}
	}
	return tab
}

// Basic returns the Authorization header of user and password.
func Basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

// Visit navigates tab to url.
func Visit(t testing.TB, tab context.Context, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatalf("navigate to %s: %v", url, err)
	}
}

// Click clicks the element sel finds, as a user would.
func Click(t testing.TB, tab context.Context, sel string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(sel))); err != nil {
		t.Fatalf("click %s: %v", sel, err)
	}
}

// Eval evaluates a JavaScript expression in tab's page and returns its
// value as a string ("" if it fails: the page may be loading).
func Eval(tab context.Context, js string) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
	if err != nil {
		return ""
	}
	return v
}

// Text returns the text of the first element sel finds in tab's page; ""
// for none.
func Text(tab context.Context, sel string) string {
	q, _ := json.Marshal(sel)
	return Eval(tab, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, q))
}

// Screenshot saves a full-page PNG of tab's page under
// $REDCRON_SCREENSHOTS (a directory) or the test's temporary directory,
// and logs where.
func Screenshot(t testing.TB, tab context.Context, name string) {
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

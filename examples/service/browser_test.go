package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// newBrowser starts headless Chromium (Debian's chromium, which
// scripts/test installs) with a fresh profile, and returns its context; it
// is closed when the test ends. The flags keep it off the network: this
// machine's is closed, and Chromium would wait on its own connections.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not on PATH (scripts/test installs Debian's chromium package): %v", err)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
	}
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancel := chromedp.NewContext(alloc)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	if err := chromedp.Do(browser, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	return browser
}

// newTab opens a tab of browser, in a context of its own (no shared
// credentials), sending the given headers with every request: a user's
// basic-auth credentials, as a browser sends them once given.
func newTab(t *testing.T, browser context.Context, headers map[string]string) context.Context {
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

// basic returns the Authorization header of user and password.
func basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
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

// textOf returns the text of the first element sel finds in tab's page.
func textOf(tab context.Context, sel string) string {
	q, _ := json.Marshal(sel)
	return eval(tab, fmt.Sprintf(`(document.querySelector(%s) || {}).textContent || ""`, q))
}

// waitText waits until the text of sel in tab's page has want.
func waitText(t *testing.T, tab context.Context, sel, want string, d time.Duration) {
	t.Helper()
	waitFor(t, d, fmt.Sprintf("%q in %s", want, sel), func() bool { return strings.Contains(textOf(tab, sel), want) })
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
	t.Logf("screenshot of the status page: %s (%d bytes)", path, len(png))
}

// replica is one service process.
type replica struct {
	base string // http://host:port
	cmd  *exec.Cmd
	log  chan string
}

// startService starts the service binary as instance, over addrs, with
// env added, and waits for it to serve.
func startService(t *testing.T, bin string, addrs []string, instance string, env ...string) *replica {
	t.Helper()
	cmd := exec.Command(bin)
	cmd.Env = append(append(os.Environ(),
		"REDCRON_ADDRS="+strings.Join(addrs, ","), "REDCRON_LISTEN=127.0.0.1:0", "REDCRON_FAST=1", "REDCRON_TRUSTED=1",
		"REDCRON_GRACE=500ms", "REDCRON_INSTANCE="+instance), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	r := &replica{cmd: cmd, log: make(chan string, 4096)}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case r.log <- sc.Text():
			default: // nobody reads the rest
			}
		}
		close(r.log)
	}()
	serving := regexp.MustCompile(`msg=serving addr=(\S+)`)
	deadline := time.After(20 * time.Second)
	for r.base == "" {
		select {
		case line, ok := <-r.log:
			if !ok {
				t.Fatalf("%s exited before serving", instance)
			}
			if m := serving.FindStringSubmatch(line); m != nil {
				r.base = "http://" + m[1]
			}
		case <-deadline:
			t.Fatalf("%s did not start serving", instance)
		}
	}
	return r
}

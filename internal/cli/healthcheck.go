package cli

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/memgate/memgate/internal/fault"
)

// runHealthcheck asks the server at --addr whether it is alive
// (/healthz) or, with --ready, ready (/readyz): the container image's
// HEALTHCHECK, which has no curl (docs/deploy.md). Exit 0 when it
// answers 200, else 1 (unavailable: 9).
func runHealthcheck(env Env, args []string) error {
	fs, cfg := flags(env, "healthcheck", true)
	var ready bool
	var timeout time.Duration
	fs.BoolVar(&ready, "ready", false, "check /readyz (database, writes, audit chains) instead of /healthz")
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	if err := parse(env, fs, cfg, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("healthcheck takes no arguments")
	}
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return usagef("healthcheck: --addr %v", err)
	}
	// A server listening on every interface is asked on loopback.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	ctx, cancel := context.WithTimeout(ctxOf(env), timeout)
	defer cancel()
	url := "http://" + net.JoinHostPort(host, port) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return usagef("healthcheck: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "%s did not answer", url)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fault.New(fault.Unavailable, fmt.Sprintf("%s answered %d", url, resp.StatusCode))
	}
	_, err = fmt.Fprintf(env.Stdout, "%s: ok\n", url)
	return err
}

// Package pgtest gives tests a fresh PostgreSQL database of their own on
// the server named by MEMGATE_TEST_POSTGRES_URL, dropped when the test
// ends, so PostgreSQL tests are independent and can run in parallel.
//
// Without that variable the tests are skipped, except under CI=true,
// where they fail: CI must not pass by running none of them. .ci/run
// starts a throwaway server (.ci/postgres.sh); developers can do the same:
//
//	source .ci/postgres.sh && memgate_pg_start && go test ./... ; memgate_pg_stop
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the test server's URL. Its user must
// be allowed to create databases.
const EnvURL = "MEMGATE_TEST_POSTGRES_URL"

// ServerURL returns the test server's URL, or skips the test (fails it
// under CI=true) when there is none.
func ServerURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL tests need %s (a server URL whose user may create databases); .ci/run sets it after starting a server with .ci/postgres.sh", EnvURL)
		}
		t.Skipf("PostgreSQL tests need %s, e.g. postgres://postgres@/postgres?host=/tmp/pgsocket (a user that may create databases); `source .ci/postgres.sh && memgate_pg_start` starts a throwaway server and sets it", EnvURL)
	}
	return u
}

// URL creates an empty database for the test and returns its URL. The
// database is dropped when the test ends (after cleanups registered later,
// such as closing a store opened on it). It is created with an ICU
// collation where the server has one, so that the schema's byte-order
// (COLLATE "C") columns are what makes orderings match SQLite's.
func URL(t testing.TB) string {
	t.Helper()
	server := ServerURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("pgtest: connect to the server of %s: %v", EnvURL, err)
	}
	defer admin.Close(context.Background())
	b := make([]byte, 8)
	rand.Read(b)
	name := "memgate_test_" + hex.EncodeToString(b)
	quoted := pgx.Identifier{name}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted+" TEMPLATE template0 ENCODING 'UTF8' LOCALE_PROVIDER icu ICU_LOCALE 'en-US' LOCALE 'C.UTF-8'"); err != nil {
		if _, err := admin.Exec(ctx, "CREATE DATABASE "+quoted+" TEMPLATE template0 ENCODING 'UTF8'"); err != nil {
			t.Fatalf("pgtest: create database: %v", err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		admin, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("pgtest: connect to drop %s: %v", name, err)
			return
		}
		defer admin.Close(context.Background())
		if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+quoted+" WITH (FORCE)"); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return WithDatabase(t, server, name)
}

// WithDatabase returns server with its database replaced by name.
func WithDatabase(t testing.TB, server, name string) string {
	t.Helper()
	u, err := url.Parse(server)
	if err != nil {
		t.Fatalf("pgtest: %s is not a URL", EnvURL)
	}
	q := u.Query()
	if q.Has("dbname") {
		q.Set("dbname", name)
		u.RawQuery = q.Encode()
	} else {
		u.Path = "/" + name
		u.RawPath = ""
	}
	return u.String()
}

// Package svctest builds what the service tests of every package stand
// on: a fresh embedded store in the test's temporary directory and a
// search index loaded from a store. Core, the transports and the SDK each
// test a service built from these two; one package builds them so the
// tests do it one way. It imports neither core nor a transport, so
// core's own tests can use it.
package svctest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memgate/memgate/internal/retrieve"
	"github.com/memgate/memgate/internal/store/sqlite"
)

// SQLite opens a new SQLite store in t's temporary directory, closed when
// the test ends.
func SQLite(t testing.TB) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "memgate.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Index is a search index (default options) loaded from st.
func Index(t testing.TB, st retrieve.Source) *retrieve.Engine {
	t.Helper()
	ix := retrieve.New(retrieve.Options{})
	if _, err := ix.Load(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	return ix
}
